// Token usage per app (credits, §1, §4.7) in the data directory: an append-only journal
// (`usage.jsonl`), totals in memory. PostgreSQL's twin is src/store/pg/usage.ts.
import path from 'node:path';
import { z } from 'zod';
import type { UsageT } from '../../contract/index.ts';
import type { IdempotencyClaim, KeptClaim } from '../../core/claims.ts';
import { DataFileError } from '../../core/errors.ts';
import { appUsage, type AppUsage, type UsageLedger } from '../shared.ts';
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
  /** A completion's Idempotency-Key claim (at: ms), saved with its usage in one line. */
  c: z.object({ k: z.string(), f: z.string(), at: z.number() }).optional(),
});

export class FileUsageLedger implements UsageLedger {
  private readonly journal: Journal;
  private readonly totals = new Map<string, AppUsage>();
  /** Claims of the completions recorded (see `idempotencyClaims`), oldest first. */
  private readonly claims = new ClaimLog();

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
      const c = parsed.data.c;
      if (c) this.claims.add({ key: c.k, fingerprint: c.f, at: c.at });
    });
  }

  /** The claims recorded with completions at or after `since` (ms), for the idempotency stage. */
  idempotencyClaims(since: number): KeptClaim[] {
    return this.claims.since(since);
  }

  /** Resolves once the entry is durable. */
  async record(appId: string, kind: 'response' | 'completion', id: string, usage: UsageT, claim?: IdempotencyClaim): Promise<void> {
    const now = Date.now();
    const c = claim && { k: claim.key, f: claim.fingerprint, at: now };
    const entry = {
      t: 'usage',
      app_id: appId,
      kind,
      id,
      at: Math.floor(now / 1000),
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
    };
    await this.journal.append(c ? { ...entry, c } : entry);
    this.add(appId, usage);
    if (c) this.claims.add({ key: c.k, fingerprint: c.f, at: c.at });
  }

  async of(appId: string): Promise<AppUsage> {
    return { ...(this.totals.get(appId) ?? appUsage(0, 0, 0)) };
  }

  async close(): Promise<void> {
    await this.journal.drain();
    await this.journal.close();
  }

  private add(appId: string, u: { input_tokens: number; output_tokens: number }): void {
    const t = this.totals.get(appId) ?? appUsage(0, 0, 0);
    this.totals.set(appId, appUsage(t.requests + 1, t.input_tokens + u.input_tokens, t.output_tokens + u.output_tokens));
  }
}
