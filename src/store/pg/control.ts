// The control plane on PostgreSQL (D-76, D-78): the document is one versioned jsonb row, changed under
// its row lock (a change derives from the row as it is then, whichever instance made the last one) with
// its audit rows in the same transaction, and a NOTIFY parley_control. Every instance LISTENs (the
// client listens again after a reconnect) and also polls the version every second, reloading when it
// moved. Each records in control_seen the version it holds; a change is answered once every live
// instance holds it (SETTLE_MS at most), so that what an admin did is in effect on every instance by
// the time the admin hears of it. The file backend's twin: src/store/file/control.ts.
import type { Sql } from 'postgres';
import { checkReferences, ControlDoc, type ControlDocT } from '../../core/control.ts';
import {
  type ControlChange,
  type ControlOptions,
  type ControlPlane,
  changed,
  KeyUseRecorder,
  mergeAudit,
  assignSigningKeys,
  mergeFixtures,
  seedDoc,
} from '../control.ts';
import { PgAuditLog, PgFailureCounts, PgKeyUse, PgSessions } from './control-tables.ts';
import { LOCK_OF } from './liveness.ts';

/** D-78: how often each instance reads the version (LISTEN usually tells it sooner). */
export const CONTROL_POLL_MS = 1000;
export const CONTROL_CHANNEL = 'parley_control';
/**
 * D-78: a change is answered once every live instance holds it, or after this long at most (an
 * instance that does not answer, stuck or cut off, takes it in by its poll when it can).
 */
export const SETTLE_MS = 2_000;
/** The notice an instance sends on CONTROL_CHANNEL once it has recorded the version it holds. */
const SEEN = 'seen';
/** A change waiting for the others reads control_seen again this often when no notice came. */
const SETTLE_POLL_MS = 100;

/** The control_seen rows of live instances (D-90's liveness lock held) other than $1 that hold a version below $2. */
const BEHIND = `SELECT count(*)::int AS behind FROM control_seen s WHERE s.instance <> $1 AND s.version < $2
  AND EXISTS (SELECT 1 FROM pg_locks l WHERE ${LOCK_OF('s.instance')})`;

export const CONTROL_SEEN_MIGRATION = {
  version: 11,
  name: 'control versions held',
  sql: `
    -- D-78: the version of the control document each instance holds (its liveness owner, D-90): a
    -- change is answered once every live instance holds it.
    CREATE TABLE control_seen (
      instance text PRIMARY KEY,
      version bigint NOT NULL
    );
  `,
};

function parseDoc(body: string): ControlDocT {
  const doc = ControlDoc.parse(JSON.parse(body));
  const fault = checkReferences(doc);
  if (fault) throw new Error(`control_document: ${fault}`);
  return doc;
}

export class PgControlPlane implements ControlPlane {
  private doc!: ControlDocT;
  private readonly listeners: Array<(doc: ControlDocT) => void> = [];
  readonly audit: PgAuditLog;
  readonly sessions: PgSessions;
  readonly signInFailures: PgFailureCounts;
  readonly keyUse: KeyUseRecorder;
  private poller: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  private refreshing: Promise<void> | undefined;
  private again = false;
  private closed = false;
  /** Changes waiting for the other instances: woken by each SEEN notice. */
  private readonly settling = new Set<() => void>();
  private recording: Promise<void> | undefined;

  private constructor(
    private readonly sql: Sql,
    private readonly o: ControlOptions,
    /** This instance's liveness owner (D-90); without one (a tool on the database) nothing is recorded. */
    private readonly instance: string | undefined,
  ) {
    const now = o.now ?? Date.now;
    this.audit = new PgAuditLog(sql, now);
    this.sessions = new PgSessions(sql, now);
    this.signInFailures = new PgFailureCounts(sql, now);
    this.keyUse = new KeyUseRecorder(new PgKeyUse(sql), (err) => o.log?.(`control plane: key use not written (${err.message})`));
  }

  /** Seeds a new database from the fixtures (D-77; the first of several instances starting at once wins), merges, listens. */
  static async open(sql: Sql, o: ControlOptions, instance?: string): Promise<PgControlPlane> {
    const c = new PgControlPlane(sql, o, instance);
    try {
      await c.load();
    } catch (err) {
      await c.close().catch(() => {});
      throw err;
    }
    return c;
  }

  private async load(): Promise<void> {
    const now = (this.o.now ?? Date.now)();
    const seed = seedDoc(this.o.fixtures, now);
    const made = await this
      .sql`INSERT INTO control_document (id, version, body) VALUES (1, ${seed.version}, ${JSON.stringify(seed)}::text::jsonb)
                                ON CONFLICT (id) DO NOTHING RETURNING id`;
    if (made.length) this.o.log?.('control plane: a new control document seeded from the fixtures');
    const [row] = await this.sql<{ body: string }[]>`SELECT body::text AS body FROM control_document WHERE id = 1`;
    this.doc = parseDoc(row!.body);
    if (this.o.auditRetentionDays !== undefined) await this.audit.prune(this.o.auditRetentionDays);
    const probe = mergeFixtures(structuredClone(this.doc), this.o.fixtures, now);
    // Several instances may merge at once: each merge adds only what the locked row still lacks.
    if (probe.added.length > 0) await this.apply((draft) => mergeAudit(mergeFixtures(draft, this.o.fixtures, now).added));
    if (probe.added.length) this.o.log?.(`control plane: added from the fixtures: ${probe.added.join(', ')}`);
    const nowS = Math.floor((this.o.now ?? Date.now)() / 1000);
    if (assignSigningKeys(structuredClone(this.doc), nowS).length > 0) await this.apply((draft) => assignSigningKeys(draft, nowS));
    if (probe.differs.length)
      this.o.log?.(`control plane: differ from the fixtures and were left as they are: ${probe.differs.join(', ')}`);
    const listening = await this.sql.listen(CONTROL_CHANNEL, (payload) => (payload === SEEN ? this.woken() : void this.refresh()));
    this.unlisten = listening.unlisten;
    this.poller = setInterval(() => void this.refresh(), CONTROL_POLL_MS);
    this.poller.unref();
    // A change committed between the read above and LISTEN sent its notice to no one here: read again.
    await this.refresh();
    // Rows of instances gone (their lock free) are dropped; this one's is written from the document it holds.
    await this.sql.unsafe(`DELETE FROM control_seen s WHERE NOT EXISTS (SELECT 1 FROM pg_locks l WHERE ${LOCK_OF('s.instance')})`);
    await this.record();
  }

  read(): ControlDocT {
    return this.doc;
  }

  async apply(change: ControlChange): Promise<ControlDocT> {
    const next = await this.sql.begin(async (tx) => {
      const [row] = await tx<{ body: string }[]>`SELECT body::text AS body FROM control_document WHERE id = 1 FOR UPDATE`;
      const { next, entries } = changed(parseDoc(row!.body), change);
      await tx`UPDATE control_document SET version = ${next.version}, body = ${JSON.stringify(next)}::text::jsonb WHERE id = 1`;
      await this.audit.write(tx, entries);
      await tx`SELECT pg_notify(${CONTROL_CHANNEL}, ${String(next.version)})`;
      return next;
    });
    this.take(next);
    await this.settle(next.version);
    return this.doc;
  }

  /** D-78: waits until no live instance holds a version below `version`, SETTLE_MS at most. */
  private async settle(version: number): Promise<void> {
    const now = this.o.now ?? Date.now;
    const deadline = now() + SETTLE_MS;
    let behind = 0;
    try {
      for (;;) {
        // Listening before reading: a notice sent while the read runs wakes the wait after it.
        let wake!: () => void;
        const woken = new Promise<void>((resolve) => (wake = resolve));
        this.settling.add(wake);
        try {
          const [row] = await this.sql.unsafe<{ behind: number }[]>(BEHIND, [this.instance ?? '', version]);
          behind = row!.behind;
          const left = deadline - now();
          if (behind === 0 || left <= 0 || this.closed) break;
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([woken, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.min(left, SETTLE_POLL_MS))))]);
          clearTimeout(timer);
        } finally {
          this.settling.delete(wake);
        }
      }
    } catch (err) {
      // The change is made: only the wait is cut short.
      if (!this.closed) this.o.log?.(`control plane: cannot read which instances hold version ${version} (${(err as Error).message})`);
      return;
    }
    if (behind > 0) this.o.log?.(`control plane: ${behind} instance(s) did not take in version ${version} within ${SETTLE_MS} ms`);
  }

  /** A SEEN notice: the changes waiting read control_seen again. */
  private woken(): void {
    for (const wake of this.settling) wake();
  }

  /** Records the version this instance holds, then tells the waiting changes; one write at a time, the last version last. */
  private record(): Promise<void> {
    const instance = this.instance;
    if (!instance || this.closed) return Promise.resolve();
    const recorded = (async () => {
      await this.recording;
      const version = this.doc.version;
      await this.sql`WITH s AS (INSERT INTO control_seen (instance, version) VALUES (${instance}, ${version})
                       ON CONFLICT (instance) DO UPDATE SET version = GREATEST(control_seen.version, EXCLUDED.version))
                     SELECT pg_notify(${CONTROL_CHANNEL}, ${SEEN})`;
    })();
    const settled = recorded.catch((err: Error) => {
      if (!this.closed) this.o.log?.(`control plane: the version held was not recorded (${err.message})`);
    });
    this.recording = settled;
    return settled;
  }

  onChange(fn: (doc: ControlDocT) => void): void {
    this.listeners.push(fn);
  }

  /** Reads the version and, if it moved, the document; one read at a time (a notice meanwhile reads again after it). */
  refresh(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.refreshing) {
      this.again = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.again = false;
        try {
          const [v] = await this.sql<{ version: string }[]>`SELECT version FROM control_document WHERE id = 1`;
          if (v && Number(v.version) > this.doc.version) {
            const [row] = await this.sql<{ body: string }[]>`SELECT body::text AS body FROM control_document WHERE id = 1`;
            this.take(parseDoc(row!.body));
          }
        } catch (err) {
          if (!this.closed) this.o.log?.(`control plane: cannot read the version (${(err as Error).message})`);
        }
      } while (this.again && !this.closed);
      this.refreshing = undefined;
    })();
    return this.refreshing;
  }

  /** Takes `doc` if it is newer than the one held, and tells the listeners. */
  private take(doc: ControlDocT): void {
    if (doc.version <= this.doc.version) return;
    this.doc = doc;
    for (const fn of this.listeners) fn(doc);
    void this.record();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.poller) clearInterval(this.poller);
    this.woken();
    await this.refreshing;
    await this.recording;
    if (this.instance) await this.sql`DELETE FROM control_seen WHERE instance = ${this.instance}`.catch(() => {});
    await this.unlisten?.().catch(() => {});
    await this.keyUse.close();
  }
}
