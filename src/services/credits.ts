// D-74 (docs/control-plane.md): credits. Every response and completion debits its team from its usage,
// in its own usage record (the store's one write, `MeteredUsage`); a reply starts only if the team's
// balance read at its start is above zero, or its app's plan has a soft limit (a warning header and
// one log line). The balance is cached per team: a request reads memory, this instance's debits add
// to it as they land, and a read older than `refreshMs` is refreshed in the background, so that the
// other instances' debits are seen within about that long.
import type { Logger } from 'pino';
import { CREDITS_WARNING_HEADER } from '../contract/admin.ts';
import type { UsageT } from '../contract/index.ts';
import type { IdempotencyClaim } from '../core/claims.ts';
import { allowanceOf, creditsOf, dateOf, millicreditsOf, monthOf, type TeamAllowance } from '../core/credits.ts';
import type { AppT, Tenants } from '../core/tenants.ts';
import { apiError } from '../core/api-errors.ts';
import type { Debit, UsageLedger } from '../store/shared.ts';

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});
/** How old a cached balance may be before a request refreshes it (in the background). */
export const BALANCE_REFRESH_MS = 5_000;

interface Cached {
  /** The month (its first second) the sum belongs to. */
  period: number;
  /** Millicredits debited this month, as last read plus this instance's debits since. */
  debited: number;
  readAt: number;
  refreshing?: Promise<void>;
  /** This instance's debits made while a refresh runs (they may be missing from its sum). */
  during: number;
}

/** D-74: a team's month as the admin surface shows it. */
export interface Balance {
  team_id: string;
  /** Millicredits. */
  allowance: number;
  debited: number;
  period_start: number;
  period_end: number;
  limit: 'soft' | 'hard';
  plans: TeamAllowance['plans'];
}

export class CreditService {
  private readonly cache = new Map<string, Cached>();
  private readonly allowances = new Map<string, { version: number; value: TeamAllowance }>();
  /** Teams warned of a soft limit reached, by month: one log line each. */
  private readonly warned = new Map<string, number>();
  /** The current month (ms), kept: working it out from a Date cost more than the rest of the check. */
  private month = { start: 0, end: 0 };

  constructor(
    private readonly ledger: UsageLedger,
    private readonly tenants: Pick<Tenants, 'apps' | 'plans' | 'version'>,
    private readonly log: Logger,
    private readonly opts: { refreshMs?: number; now?: () => number } = {},
  ) {}

  now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** The first second (Unix seconds) of the current month (UTC). */
  private period(now = this.now()): number {
    if (now < this.month.start || now >= this.month.end) {
      const m = monthOf(now);
      this.month = { start: m.start * 1000, end: m.end * 1000 };
    }
    return this.month.start / 1000;
  }

  /**
   * At a reply's start: the headers of its answer, or a throw (429 `credits_exhausted`) when the team's
   * balance is ≤ 0 and the app's plan has a hard limit. Synchronous once the team's month is cached.
   */
  admit(app: AppT): Record<string, string> | Promise<Record<string, string>> {
    const now = this.now();
    const period = this.period(now);
    let c = this.cache.get(app.team_id);
    if (!c || c.period !== period) {
      // The team's first reply here, or the month's: its debits are read from the store (once; the
      // replies that come meanwhile wait for the same read, and debits landing meanwhile are kept).
      c = { period, debited: 0, readAt: 0, during: 0 };
      this.cache.set(app.team_id, c);
      void this.refresh(app.team_id, c);
    }
    const cached = c;
    if (cached.readAt === 0) return cached.refreshing!.then(() => this.judge(app, cached));
    if (now - cached.readAt >= (this.opts.refreshMs ?? BALANCE_REFRESH_MS)) void this.refresh(app.team_id, cached);
    return this.judge(app, cached);
  }

  private judge(app: AppT, c: Cached): Record<string, string> {
    const { allowance } = this.allowance(app.team_id);
    const left = allowance - c.debited;
    if (left > 0) return NO_HEADERS;
    const month = dateOf(c.period / 86_400).slice(0, 7);
    const end = dateOf(monthOf(c.period * 1000).end / 86_400);
    const said = `balance ${fmt(left)} of ${fmt(allowance)} credits`;
    if (this.tenants.plans.get(app.plan)?.credits.limit === 'hard') {
      throw apiError(
        'credits_exhausted',
        `The team's credits for ${month} are used up (${said}); replies are refused until ${end}, when the month's allowance comes, or until the plan changes.`,
      );
    }
    if (this.warned.get(app.team_id) !== c.period) {
      this.warned.set(app.team_id, c.period);
      this.log.warn(
        { team_id: app.team_id, app_id: app.id, period: month },
        'the team has used its credits for the month; its plan has a soft limit, so replies go on',
      );
    }
    return { [CREDITS_WARNING_HEADER]: `credits exhausted for ${month} (${said}); the plan's limit is soft, so this reply runs` };
  }

  /** Reads the team's month from the store; never throws (a failed read keeps the last sum, and is logged). */
  private refresh(teamId: string, c: Cached): Promise<void> {
    c.refreshing ??= (async () => {
      c.during = 0;
      try {
        const sum = await this.ledger.debited(teamId, c.period);
        // A debit of this instance landing while the sum was read may or may not be in it: counted
        // again rather than missed (a balance errs low for at most one refresh).
        c.debited = sum + c.during;
        c.readAt = this.now();
      } catch (err) {
        this.log.warn({ err: (err as Error).message, team_id: teamId }, 'reading the credit balance failed; the last one read stays');
        c.readAt = this.now();
      } finally {
        c.refreshing = undefined;
      }
    })();
    return c.refreshing;
  }

  /** What the reply of `appId` debits its team for `usage`. */
  debitOf(appId: string, usage: UsageT): Debit | undefined {
    const app = this.tenants.apps.get(appId);
    if (!app) return undefined;
    return {
      team_id: app.team_id,
      millicredits: millicreditsOf(usage.input_tokens + usage.output_tokens, this.tenants.plans.get(app.plan)),
    };
  }

  /** A debit has landed (durable): the cached balance of its team takes it at once. */
  debited(d: Debit): void {
    const c = this.cache.get(d.team_id);
    if (!c || c.period !== this.period()) return;
    c.debited += d.millicredits;
    if (c.refreshing) c.during += d.millicredits;
  }

  /** The team's allowance, recomputed when the control plane's document changes. */
  allowance(teamId: string): TeamAllowance {
    const had = this.allowances.get(teamId);
    if (had && had.version === this.tenants.version) return had.value;
    const value = allowanceOf(teamId, this.tenants);
    this.allowances.set(teamId, { version: this.tenants.version, value });
    return value;
  }

  /** D-74: the team's month as the store has it now (the admin surface; no cache). */
  async balance(teamId: string): Promise<Balance> {
    const { start, end } = monthOf(this.now());
    const a = this.allowance(teamId);
    const debited = await this.ledger.debited(teamId, start);
    const hard = [...this.tenants.apps.values()].some(
      (app) => app.team_id === teamId && this.tenants.plans.get(app.plan)?.credits.limit === 'hard',
    );
    return {
      team_id: teamId,
      allowance: a.allowance,
      debited,
      period_start: start,
      period_end: end,
      limit: hard ? 'hard' : 'soft',
      plans: a.plans,
    };
  }

  /** D-74: usage per app per UTC day (day numbers, inclusive). */
  days(appIds: readonly string[], since: number, until: number) {
    return this.ledger.days(appIds, since, until);
  }

  /** The usage ledger the services write through: each record carries its debit. */
  meter(): UsageLedger {
    return new MeteredUsage(this.ledger, this);
  }
}

const fmt = (mc: number) => creditsOf(mc).toLocaleString('en-US', { maximumFractionDigits: 3 });

/** D-74: the usage ledger with each reply's debit written in its usage record, the one write it makes. */
class MeteredUsage implements UsageLedger {
  /** D-104: the row handed to a store's save when the inner ledger can (PostgreSQL), with its debit. */
  readonly recordWith?: UsageLedger['recordWith'];

  constructor(
    private readonly inner: UsageLedger,
    private readonly credits: CreditService,
  ) {
    const recordWith = inner.recordWith?.bind(inner);
    if (recordWith)
      this.recordWith = async (appId, id, usage, step) => {
        const debit = this.credits.debitOf(appId, usage);
        const out = await recordWith(appId, id, usage, step, debit);
        if (debit && debit.millicredits > 0) this.credits.debited(debit);
        return out;
      };
  }

  async record(appId: string, kind: 'response' | 'completion', id: string, usage: UsageT, claim?: IdempotencyClaim): Promise<void> {
    const debit = this.credits.debitOf(appId, usage);
    await this.inner.record(appId, kind, id, usage, claim, debit);
    if (debit && debit.millicredits > 0) this.credits.debited(debit);
  }

  of(appId: string) {
    return this.inner.of(appId);
  }
  debited(teamId: string, since: number) {
    return this.inner.debited(teamId, since);
  }
  days(appIds: readonly string[], since: number, until: number) {
    return this.inner.days(appIds, since, until);
  }
  close() {
    return this.inner.close();
  }
}
