// D-88 with several instances on PostgreSQL: `parley webhooks listen` sees every event of its app,
// whichever instance recorded it, and no change pays a NOTIFY for it (PostgreSQL ≤ 18: a notifying
// commit takes a global lock). Two parts:
// - which apps are followed: an instance announces its listeners' apps on `parley_webhook_follows`
//   when one gains its first listener or loses its last, and again every RENEW_MS while it has any;
//   the others keep each for FOLLOW_TTL_MS (a killed instance's lapse) and make those apps' events
//   (D-83). An instance that (re)starts listening asks, and the others answer at once.
// - the events: while this instance has a listener, it reads the outbox's new rows every POLL_MS
//   (`seq` order) and tells its listeners those another instance recorded. A number taken by a
//   transaction not yet committed is a gap, read again until it appears or GAP_MS have passed.
import { randomBytes } from 'node:crypto';
import type { Sql } from 'postgres';
import { type AppFollows, LocalFollows, type OutboxEvent } from '../webhooks.ts';

export const FOLLOWS_CHANNEL = 'parley_webhook_follows';
/** How often an instance with listeners announces their apps again. */
export const RENEW_MS = 2_000;
/** An announced app is followed until this long after its last announcement. */
export const FOLLOW_TTL_MS = 3 * RENEW_MS;
/** How often an instance with listeners reads the outbox's new rows. */
export const POLL_MS = 250;
/** A number missing this long is given up (a rolled-back transaction, or one that commits later than this). */
export const GAP_MS = 10_000;
/** A jump of numbers wider than this is not tracked number by number (given up at once). */
const MAX_GAP = 10_000;
/** Rows read at a time. */
const BATCH = 500;
/** Apps per announcement (a NOTIFY payload is under 8,000 bytes). */
const APPS_PER_NOTICE = 100;

interface Notice {
  /** The announcing instance. */
  i: string;
  /** Apps it follows now. */
  apps?: string[];
  /** Apps it follows no more. */
  gone?: string[];
  /** Asks the others to announce theirs. */
  ask?: true;
}

interface Row {
  seq: string;
  id: string;
  team_id: string;
  app_id: string;
  type: string;
  created_at: string;
  body: string | null;
}

export class PgFollows implements AppFollows {
  private readonly instance = `i_${randomBytes(8).toString('hex')}`;
  /** This instance's listeners per app: an app's first is announced, and its last. */
  private readonly local = new LocalFollows({ first: (appId) => this.firstListener(appId), last: (appId) => this.lastListener(appId) });
  /** Apps other instances follow: app → instance → until (ms). */
  private readonly remote = new Map<string, Map<string, number>>();
  private unlisten: (() => Promise<void>) | undefined;
  private renewer: NodeJS.Timeout | undefined;
  private poller: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  /** The highest number read while listening, and the numbers below it not seen yet (with when first missed). */
  private hi: number | undefined;
  private begun: Promise<void> | undefined;
  private readonly gaps = new Map<number, number>();
  /** Events told here when recorded (id → when): the poll skips them. */
  private readonly toldHere = new Map<string, number>();
  private closed = false;

  constructor(
    private readonly sql: Sql,
    /** Tells this instance's listeners of events another instance recorded. */
    private readonly tell: (events: OutboxEvent[]) => void,
    private readonly log: (message: string) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  async open(): Promise<void> {
    // postgres.js LISTENs again after a reconnect and calls onlisten each time: notices were lost, so ask.
    const listening = await this.sql.listen(
      FOLLOWS_CHANNEL,
      (payload) => this.noticed(payload),
      () => void this.notify({ i: this.instance, ask: true }),
    );
    this.unlisten = listening.unlisten;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.renewer);
    clearInterval(this.poller);
    await this.polling;
    if (this.local.size > 0) await this.notify({ i: this.instance, gone: this.local.apps() });
    await this.unlisten?.().catch(() => {});
  }

  has(appId: string): boolean {
    if (this.local.has(appId)) return true;
    const by = this.remote.get(appId);
    if (!by) return false;
    const now = this.now();
    for (const [instance, until] of by) {
      if (until > now) return true;
      by.delete(instance);
    }
    this.remote.delete(appId);
    return false;
  }

  follow(appId: string): () => void {
    return this.local.follow(appId);
  }

  private firstListener(appId: string): void {
    this.started();
    // Announced once the cursor is read: an event the others make for it from then on is after the cursor.
    void this.cursor()
      .catch((err: Error) => this.log(`webhook listeners: the outbox could not be read (${err.message})`))
      .finally(() => this.notify({ i: this.instance, apps: [appId] }));
  }

  private lastListener(appId: string): void {
    void this.notify({ i: this.instance, gone: [appId] });
    if (this.local.size === 0) this.stopped();
  }

  /** Events this instance is recording (in their transaction) and tells its listeners itself: the poll skips them. */
  recorded(events: OutboxEvent[]): void {
    if (!this.renewer) return;
    const now = this.now();
    for (const e of events) if (this.local.has(e.app_id)) this.toldHere.set(e.id, now);
  }

  private started(): void {
    if (this.renewer || this.closed) return;
    this.renewer = setInterval(() => this.announce(), RENEW_MS);
    this.renewer.unref();
    this.poller = setInterval(() => {
      this.polling ??= this.poll()
        .catch((err: Error) => this.log(`webhook listeners: the outbox could not be read (${err.message})`))
        .finally(() => {
          this.polling = undefined;
        });
    }, POLL_MS);
    this.poller.unref();
  }

  /** Reads where the outbox ends: the rows after it are the ones the poll tells. */
  private cursor(): Promise<void> {
    this.begun ??= this.sql<{ hi: string | null }[]>`SELECT max(seq) AS hi FROM webhook_events`.then(
      ([row]) => {
        // Listening may have stopped meanwhile.
        if (this.renewer) this.hi ??= Number(row?.hi ?? 0);
      },
      (err: Error) => {
        this.begun = undefined;
        throw err;
      },
    );
    return this.begun;
  }

  private stopped(): void {
    clearInterval(this.renewer);
    clearInterval(this.poller);
    this.renewer = this.poller = undefined;
    this.begun = undefined;
    this.hi = undefined;
    this.gaps.clear();
    this.toldHere.clear();
  }

  private announce(): void {
    const apps = this.local.apps();
    for (let i = 0; i < apps.length; i += APPS_PER_NOTICE) void this.notify({ i: this.instance, apps: apps.slice(i, i + APPS_PER_NOTICE) });
  }

  private async notify(n: Notice): Promise<void> {
    if (this.closed && !n.gone) return;
    await this.sql`SELECT pg_notify(${FOLLOWS_CHANNEL}, ${JSON.stringify(n)})`.catch((err: Error) =>
      this.log(`webhook listeners: a notice was not sent (${err.message})`),
    );
  }

  private noticed(payload: string): void {
    let n: Notice;
    try {
      n = JSON.parse(payload) as Notice;
    } catch {
      return;
    }
    if (n.i === this.instance) return;
    if (n.ask) {
      if (this.local.size > 0) this.announce();
      return;
    }
    const until = this.now() + FOLLOW_TTL_MS;
    for (const app of n.apps ?? []) {
      const by = this.remote.get(app) ?? new Map<string, number>();
      by.set(n.i, until);
      this.remote.set(app, by);
    }
    for (const app of n.gone ?? []) {
      this.remote.get(app)?.delete(n.i);
      if (this.remote.get(app)?.size === 0) this.remote.delete(app);
    }
  }

  /** Reads the rows after `hi` and those of the gaps still open; tells the followed apps' events recorded elsewhere. */
  private async poll(): Promise<void> {
    if (this.hi === undefined) return this.cursor();
    const apps = this.local.apps();
    const gaps = [...this.gaps.keys()];
    const rows = await this.sql<Row[]>`
      SELECT seq, id, team_id, app_id, type, created_at, CASE WHEN app_id = ANY(${apps}::text[]) THEN body END AS body
      FROM webhook_events WHERE seq > ${this.hi} OR seq = ANY(${gaps}::bigint[]) ORDER BY seq LIMIT ${BATCH}`;
    if (this.hi === undefined) return;
    const now = this.now();
    const found: OutboxEvent[] = [];
    for (const r of rows) {
      const seq = Number(r.seq);
      if (this.gaps.delete(seq) || seq > this.hi) {
        if (seq - this.hi <= MAX_GAP) for (let s = this.hi + 1; s < seq; s++) this.gaps.set(s, now);
        if (seq > this.hi) this.hi = seq;
        if (this.toldHere.delete(r.id) || r.body === null || !this.local.has(r.app_id)) continue;
        found.push({ ...r, created_at: Number(r.created_at), body: r.body, deliveries: [] });
      }
    }
    for (const [seq, since] of this.gaps) if (now - since > GAP_MS) this.gaps.delete(seq);
    for (const [id, at] of this.toldHere) if (now - at > GAP_MS) this.toldHere.delete(id);
    if (found.length > 0) this.tell(found);
  }
}
