// The control plane on PostgreSQL (D-76, D-78): the document is one versioned jsonb row, changed under
// its row lock (a change derives from the row as it is then, whichever instance made the last one) with
// its audit rows in the same transaction, and a NOTIFY parley_control. Every instance LISTENs (the
// client listens again after a reconnect) and also polls the version every second, reloading when it
// moved: a change is effective everywhere within 2 s. The file backend's twin: src/store/file/control.ts.
import type { Sql } from 'postgres';
import { checkReferences, ControlDoc, type ControlDocT } from '../../core/control.ts';
import {
  type ControlChange,
  type ControlOptions,
  type ControlPlane,
  changed,
  DEFAULT_AUDIT_RETENTION_DAYS,
  KeyUseRecorder,
  mergeAudit,
  mergeFixtures,
  seedDoc,
} from '../control.ts';
import { PgAuditLog, PgFailureCounts, PgKeyUse, PgSessions } from './control-tables.ts';

/** D-78: how often each instance reads the version (LISTEN usually tells it sooner). */
export const CONTROL_POLL_MS = 1000;
export const CONTROL_CHANNEL = 'parley_control';

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

  private constructor(
    private readonly sql: Sql,
    private readonly o: ControlOptions,
  ) {
    const now = o.now ?? Date.now;
    this.audit = new PgAuditLog(sql, now);
    this.sessions = new PgSessions(sql, now);
    this.signInFailures = new PgFailureCounts(sql, now);
    this.keyUse = new KeyUseRecorder(new PgKeyUse(sql), (err) => o.log?.(`control plane: key use not written (${err.message})`));
  }

  /** Seeds a new database from the fixtures (D-77; the first of several instances starting at once wins), merges, listens. */
  static async open(sql: Sql, o: ControlOptions): Promise<PgControlPlane> {
    const c = new PgControlPlane(sql, o);
    try {
      await c.load();
    } catch (err) {
      await c.close().catch(() => {});
      throw err;
    }
    return c;
  }

  private async load(): Promise<void> {
    const seed = seedDoc(this.o.fixtures);
    const made = await this
      .sql`INSERT INTO control_document (id, version, body) VALUES (1, ${seed.version}, ${JSON.stringify(seed)}::text::jsonb)
                                ON CONFLICT (id) DO NOTHING RETURNING id`;
    if (made.length) this.o.log?.('control plane: a new control document seeded from the fixtures');
    const [row] = await this.sql<{ body: string }[]>`SELECT body::text AS body FROM control_document WHERE id = 1`;
    this.doc = parseDoc(row!.body);
    await this.audit.prune(this.o.auditRetentionDays ?? DEFAULT_AUDIT_RETENTION_DAYS);
    const probe = mergeFixtures(structuredClone(this.doc), this.o.fixtures);
    // Several instances may merge at once: each merge adds only what the locked row still lacks.
    if (probe.added.length > 0) await this.apply((draft) => mergeAudit(mergeFixtures(draft, this.o.fixtures).added));
    if (probe.added.length) this.o.log?.(`control plane: added from the fixtures: ${probe.added.join(', ')}`);
    if (probe.differs.length)
      this.o.log?.(`control plane: differ from the fixtures and were left as they are: ${probe.differs.join(', ')}`);
    const listening = await this.sql.listen(CONTROL_CHANNEL, () => void this.refresh());
    this.unlisten = listening.unlisten;
    this.poller = setInterval(() => void this.refresh(), CONTROL_POLL_MS);
    this.poller.unref();
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
    return this.doc;
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
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.poller) clearInterval(this.poller);
    await this.refreshing;
    await this.unlisten?.().catch(() => {});
    await this.keyUse.close();
  }
}
