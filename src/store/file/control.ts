// The control plane in the data directory (D-76): the document `control.json`, read and written with
// lowdb through a durable adapter (temporary file, fsync, rename, fsync of the folder: whole or absent
// after kill -9 at any instant), and the audit log, an append-only journal `control/audit.jsonl`.
// A change and its audit entries are one step: the entries are made durable first, marked with the
// document version they belong to, and the document after them; at open, entries of a version the
// document never reached are voided (a crash came between the two writes). PostgreSQL's twin:
// src/store/pg/control.ts.
import fs from 'node:fs/promises';
import path from 'node:path';
import { Low, type Adapter } from 'lowdb';
import { checkReferences, ControlDoc, type ControlDocT } from '../../core/control.ts';
import { DataFileError } from '../../core/errors.ts';
import {
  type AuditDraft,
  type AuditLog,
  type AuditQuery,
  type AuditRecord,
  auditRecord,
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
import { FileFailureCounts, FileKeyUse, FileSessions } from './control-journals.ts';
import { syncDir, writeDurably } from './durable.ts';
import { Journal } from './journal.ts';

/** lowdb's adapter for one JSON file written durably (durable.ts); a file that is not JSON refuses the start. */
class DurableJsonFile implements Adapter<ControlDocT | null> {
  constructor(readonly file: string) {}

  async read(): Promise<ControlDocT | null> {
    let text: string;
    try {
      text = await fs.readFile(this.file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return null;
      throw new DataFileError(this.file, `cannot be read (${code})`);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw new DataFileError(this.file, 'is not valid JSON; restore it from a backup');
    }
    const parsed = ControlDoc.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new DataFileError(this.file, `${issue.path.join('.')}: ${issue.message}`);
    }
    const fault = checkReferences(parsed.data);
    if (fault) throw new DataFileError(this.file, fault);
    return parsed.data;
  }

  async write(doc: ControlDocT | null): Promise<void> {
    await writeDurably(this.file, `${JSON.stringify(doc, null, 1)}\n`);
    await syncDir(path.dirname(this.file));
  }
}

/** D-75: the audit journal, its live entries in memory (oldest first). */
export class FileAuditLog implements AuditLog {
  readonly entries: AuditRecord[] = [];
  private journal!: Journal;

  constructor(private readonly now: () => number) {}

  /** Reads the journal; entries of versions past `version` are voided; entries older than the retention (if any) are compacted away. */
  async open(file: string, version: number, retentionDays: number | undefined): Promise<void> {
    this.journal = new Journal(file);
    const read: Array<{ v: number | null; a: AuditRecord }> = [];
    const { lines } = await this.journal.open((e, line) => {
      const entry = e as { v?: number | null; a?: AuditRecord; void?: number };
      if (typeof entry.void === 'number') {
        for (let i = read.length - 1; i >= 0; i--) if (read[i]!.v === entry.void) read.splice(i, 1);
      } else if (entry.a && typeof entry.a.id === 'string') read.push({ v: entry.v ?? null, a: entry.a });
      else throw new DataFileError(file, `line ${line}: not an audit entry`);
    });
    const lost = read.some((r) => r.v !== null && r.v > version);
    if (lost) await this.journal.append({ void: version + 1 });
    const since = retentionDays === undefined ? -Infinity : Math.floor(this.now() / 1000) - retentionDays * 86_400;
    for (const r of read) if ((r.v === null || r.v <= version) && r.a.created_at >= since) this.entries.push(r.a);
    if (this.entries.length < lines) await this.journal.compact(() => this.entries.map((a) => ({ v: null, a })));
  }

  /** Durable when it resolves; `v`: the document version the entries belong to (null: none). */
  async write(drafts: AuditDraft[], v: number | null): Promise<AuditRecord[]> {
    const now = this.now();
    const records = drafts.map((d) => auditRecord(d, now));
    await Promise.all(records.map((a) => this.journal.append({ v, a })));
    return records;
  }

  /** Entries of a change that did not happen (its document write failed). */
  async voided(v: number): Promise<void> {
    await this.journal.append({ void: v });
  }

  async append(drafts: AuditDraft[]): Promise<AuditRecord[]> {
    const records = await this.write(drafts, null);
    this.entries.push(...records);
    return records;
  }

  async list(q: AuditQuery): Promise<{ data: AuditRecord[]; has_more: boolean }> {
    let i = this.entries.length - 1;
    if (q.after !== undefined) {
      const at = this.entries.findIndex((a) => a.id === q.after);
      i = at === -1 ? -1 : at - 1;
    }
    const data: AuditRecord[] = [];
    for (; i >= 0; i--) {
      const a = this.entries[i]!;
      if (a.team_id !== q.team_id || (q.action !== undefined && a.action !== q.action)) continue;
      if ((q.since !== undefined && a.created_at < q.since) || (q.until !== undefined && a.created_at > q.until)) continue;
      if (data.length === q.limit) return { data, has_more: true };
      data.push(a);
    }
    return { data, has_more: false };
  }

  close(): Promise<void> {
    return this.journal.close();
  }
}

export class FileControlPlane implements ControlPlane {
  private low!: Low<ControlDocT | null>;
  private doc!: ControlDocT;
  private readonly listeners: Array<(doc: ControlDocT) => void> = [];
  /** One change at a time: each derives from the document the previous one left. */
  private turn: Promise<unknown> = Promise.resolve();
  readonly audit: FileAuditLog;
  sessions!: FileSessions;
  signInFailures!: FileFailureCounts;
  keyUse!: KeyUseRecorder;
  private keyUseFile!: FileKeyUse;

  private constructor(
    private readonly dataDir: string,
    private readonly o: ControlOptions,
  ) {
    this.audit = new FileAuditLog(o.now ?? Date.now);
  }

  /** Opens (or seeds, D-77) `<data dir>/control.json` and the journals of `<data dir>/control/`. */
  static async open(dataDir: string, o: ControlOptions): Promise<FileControlPlane> {
    const c = new FileControlPlane(path.resolve(dataDir), o);
    await c.load();
    return c;
  }

  private async load(): Promise<void> {
    const dir = path.join(this.dataDir, 'control');
    await fs.mkdir(dir, { recursive: true });
    const now = (this.o.now ?? Date.now)();
    this.low = new Low(new DurableJsonFile(path.join(this.dataDir, 'control.json')), null);
    await this.low.read();
    if (this.low.data === null) {
      this.low.data = seedDoc(this.o.fixtures, now);
      await this.low.write();
      this.o.log?.('control plane: a new control.json seeded from the fixtures');
    }
    this.doc = this.low.data;
    await this.audit.open(path.join(dir, 'audit.jsonl'), this.doc.version, this.o.auditRetentionDays);
    this.sessions = await FileSessions.open(dir, now);
    this.signInFailures = await FileFailureCounts.open(dir, now);
    this.keyUseFile = await FileKeyUse.open(dir);
    this.keyUse = new KeyUseRecorder(this.keyUseFile, (err) => this.o.log?.(`control plane: key use not written (${err.message})`));
    const probe = mergeFixtures(structuredClone(this.doc), this.o.fixtures, now);
    if (probe.added.length > 0) await this.apply((draft) => mergeAudit(mergeFixtures(draft, this.o.fixtures, now).added));
    if (probe.added.length) this.o.log?.(`control plane: added from the fixtures: ${probe.added.join(', ')}`);
    const nowS = Math.floor((this.o.now ?? Date.now)() / 1000);
    if (assignSigningKeys(structuredClone(this.doc), nowS).length > 0) await this.apply((draft) => assignSigningKeys(draft, nowS));
    if (probe.differs.length)
      this.o.log?.(`control plane: differ from the fixtures and were left as they are: ${probe.differs.join(', ')}`);
  }

  read(): ControlDocT {
    return this.doc;
  }

  apply(change: ControlChange): Promise<ControlDocT> {
    const run = this.turn.then(async () => {
      const { next, entries } = changed(this.doc, change);
      const records = await this.audit.write(entries, next.version);
      try {
        this.low.data = next;
        await this.low.write();
      } catch (err) {
        this.low.data = this.doc;
        await this.audit.voided(next.version).catch(() => {});
        throw err;
      }
      this.doc = next;
      this.audit.entries.push(...records);
      for (const fn of this.listeners) fn(next);
      return next;
    });
    this.turn = run.catch(() => {});
    return run;
  }

  onChange(fn: (doc: ControlDocT) => void): void {
    this.listeners.push(fn);
  }

  async close(): Promise<void> {
    await this.turn;
    await this.keyUse.close();
    await Promise.all([this.audit.close(), this.sessions.close(), this.signInFailures.close(), this.keyUseFile.close()]);
  }
}
