// Token usage per app (credits, §1, §4.7) in the data directory: an append-only journal
// (`usage.jsonl`), totals in memory. D-74: each line carries its reply's debit, so that the usage and
// the debit land in one journal step or not at all; the per-day sums and the teams' debits are kept
// in memory from the lines. PostgreSQL's twin is src/store/pg/usage.ts.
import path from 'node:path';
import { z } from 'zod';
import type { UsageT } from '../../contract/index.ts';
import type { IdempotencyClaim, KeptClaim } from '../../core/claims.ts';
import { DataFileError } from '../../core/errors.ts';
import { dayOf } from '../../core/credits.ts';
import { appUsage, type AppUsage, type Debit, type UsageDayRow, type UsageLedger } from '../shared.ts';
import { ClaimLog } from './claims.ts';
import { Journal } from './journal.ts';

const Entry = z.object({
  t: z.literal('usage'),
  app_id: z.string(),
  kind: z.enum(['response', 'completion']),
  id: z.string(),
  at: z.number().int(),
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  /** D-74: the debit (absent on lines written before it). */
  team_id: z.string().optional(),
  millicredits: z.number().int().nonnegative().optional(),
  /** A completion's Idempotency-Key claim (at: ms), saved with its usage in one line. */
  c: z.object({ k: z.string(), f: z.string(), at: z.number() }).optional(),
});

export class FileUsageLedger implements UsageLedger {
  private readonly journal: Journal;
  private readonly totals = new Map<string, AppUsage>();
  /** Claims of the completions recorded (see `idempotencyClaims`), oldest first. */
  private readonly claims = new ClaimLog();
  /** D-74: app → day → the day's sums. */
  private readonly appDays = new Map<string, Map<number, UsageDayRow>>();
  /** D-74: team → day → millicredits debited. */
  private readonly teamDays = new Map<string, Map<number, number>>();

  private constructor(dataDir: string) {
    this.journal = new Journal(path.join(path.resolve(dataDir), 'usage.jsonl'));
  }

  /** Reads `<data dir>/usage.jsonl` (a bad line refuses the start: usage is billing). */
  static async open(dataDir: string): Promise<FileUsageLedger> {
    const ledger = new FileUsageLedger(dataDir);
    await ledger.load();
    return ledger;
  }

  private async load(): Promise<void> {
    await this.journal.open((entry, line) => {
      const parsed = Entry.safeParse(entry);
      if (!parsed.success) throw new DataFileError(this.journal.file, `line ${line}: ${parsed.error.issues[0]!.message}`);
      this.add(parsed.data.app_id, parsed.data);
      this.addDay(parsed.data);
      const c = parsed.data.c;
      if (c) this.claims.add({ key: c.k, fingerprint: c.f, at: c.at });
    });
  }

  /** The claims recorded with completions at or after `since` (ms), for the idempotency stage. */
  idempotencyClaims(since: number): KeptClaim[] {
    return this.claims.since(since);
  }

  /** Resolves once the entry is durable. */
  async record(
    appId: string,
    kind: 'response' | 'completion',
    id: string,
    usage: UsageT,
    claim?: IdempotencyClaim,
    debit?: Debit,
  ): Promise<void> {
    const now = Date.now();
    const c = claim && { k: claim.key, f: claim.fingerprint, at: now };
    const entry = {
      t: 'usage' as const,
      app_id: appId,
      kind,
      id,
      at: Math.floor(now / 1000),
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
      ...(debit ? { team_id: debit.team_id, millicredits: debit.millicredits } : {}),
    };
    await this.journal.append(c ? { ...entry, c } : entry);
    this.add(appId, usage);
    this.addDay(entry);
    if (c) this.claims.add({ key: c.k, fingerprint: c.f, at: c.at });
  }

  async of(appId: string): Promise<AppUsage> {
    return { ...(this.totals.get(appId) ?? appUsage(0, 0, 0)) };
  }

  async debited(teamId: string, since: number): Promise<number> {
    const from = dayOf(since);
    let sum = 0;
    for (const [day, mc] of this.teamDays.get(teamId) ?? []) if (day >= from) sum += mc;
    return sum;
  }

  async days(appIds: readonly string[], since: number, until: number): Promise<UsageDayRow[]> {
    const rows: UsageDayRow[] = [];
    for (const appId of appIds)
      for (const [day, row] of this.appDays.get(appId) ?? []) if (day >= since && day <= until) rows.push({ ...row });
    return rows.sort((a, b) => a.day - b.day || a.app_id.localeCompare(b.app_id));
  }

  async close(): Promise<void> {
    await this.journal.drain();
    await this.journal.close();
  }

  /** D-74: the line's day sums (a team's debits by day: `debited` reads a month of them). */
  private addDay(e: {
    app_id: string;
    at: number;
    input_tokens: number;
    output_tokens: number;
    team_id?: string;
    millicredits?: number;
  }): void {
    const day = dayOf(e.at);
    let days = this.appDays.get(e.app_id);
    if (!days) this.appDays.set(e.app_id, (days = new Map()));
    let row = days.get(day);
    if (!row) days.set(day, (row = { app_id: e.app_id, day, requests: 0, input_tokens: 0, output_tokens: 0, millicredits: 0 }));
    row.requests++;
    row.input_tokens += e.input_tokens;
    row.output_tokens += e.output_tokens;
    row.millicredits += e.millicredits ?? 0;
    if (e.team_id === undefined || !e.millicredits) return;
    let team = this.teamDays.get(e.team_id);
    if (!team) this.teamDays.set(e.team_id, (team = new Map()));
    team.set(day, (team.get(day) ?? 0) + e.millicredits);
  }

  private add(appId: string, u: { input_tokens: number; output_tokens: number }): void {
    const t = this.totals.get(appId) ?? appUsage(0, 0, 0);
    this.totals.set(appId, appUsage(t.requests + 1, t.input_tokens + u.input_tokens, t.output_tokens + u.output_tokens));
  }
}
