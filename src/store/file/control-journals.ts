// What the control plane writes per request or attempt in the data directory (D-76): append-only
// journals in `<data dir>/control/`, replayed into memory at open and compacted there (only what is
// still alive is written back). PostgreSQL's twins are in src/store/pg/control-tables.ts.
import path from 'node:path';
import { DataFileError } from '../../core/errors.ts';
import { type FailureCounts, SESSION_MAX_AGE_MS, type SessionRecord, type Sessions } from '../control.ts';
import { Journal } from './journal.ts';

/** Opens `file`, hands each entry to `onEntry`, then writes back `keep()` if it is shorter than what was read. */
async function openCompacted(file: string, onEntry: (e: Record<string, unknown>) => void, keep: () => unknown[]): Promise<Journal> {
  const journal = new Journal(file);
  const { lines } = await journal.open((e, line) => {
    if (!e || typeof e !== 'object') throw new DataFileError(file, `line ${line}: not an object`);
    onEntry(e as Record<string, unknown>);
  });
  const kept = keep();
  if (kept.length < lines) await journal.compact(() => keep());
  return journal;
}

/** D-67: `sessions.jsonl`, lines `{s: record}`, `{touch, at}`, `{end}`, `{end_member, except}`. */
export class FileSessions implements Sessions {
  private readonly map = new Map<string, SessionRecord>();
  private journal!: Journal;

  static async open(dir: string, now: number): Promise<FileSessions> {
    const s = new FileSessions();
    s.journal = await openCompacted(
      path.join(dir, 'sessions.jsonl'),
      (e) => {
        if (e.s) s.map.set((e.s as SessionRecord).id, e.s as SessionRecord);
        else if (typeof e.touch === 'string') {
          const found = s.map.get(e.touch);
          if (found) found.seen_at = Number(e.at);
        } else if (typeof e.end === 'string') s.map.delete(e.end);
        else if (typeof e.end_member === 'string') s.dropMember(e.end_member, e.except as string | undefined);
      },
      () => {
        for (const [id, r] of s.map) if (r.created_at < now - SESSION_MAX_AGE_MS) s.map.delete(id);
        return [...s.map.values()].map((r) => ({ s: r }));
      },
    );
    return s;
  }

  async create(r: SessionRecord): Promise<void> {
    await this.journal.append({ s: r });
    this.map.set(r.id, { ...r });
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    const r = this.map.get(id);
    return r && { ...r };
  }

  async touch(id: string, at: number): Promise<void> {
    if (!this.map.has(id)) return;
    await this.journal.append({ touch: id, at });
    const r = this.map.get(id);
    if (r) r.seen_at = at;
  }

  async end(id: string): Promise<void> {
    if (!this.map.has(id)) return;
    await this.journal.append({ end: id });
    this.map.delete(id);
  }

  async endMember(memberId: string, except?: string): Promise<void> {
    await this.journal.append(except ? { end_member: memberId, except } : { end_member: memberId });
    this.dropMember(memberId, except);
  }

  private dropMember(memberId: string, except: string | undefined): void {
    for (const [id, r] of this.map) if (r.member_id === memberId && id !== except) this.map.delete(id);
  }

  close(): Promise<void> {
    return this.journal.close();
  }
}

/**
 * D-69: `sign-in-failures.jsonl`, lines `{k, at}`, `{k, at, release: true}` and `{k, clear: true}`;
 * failures older than a day are dropped at open.
 */
export class FileFailureCounts implements FailureCounts {
  private readonly map = new Map<string, number[]>();
  private journal!: Journal;

  static async open(dir: string, now: number): Promise<FileFailureCounts> {
    const f = new FileFailureCounts();
    f.journal = await openCompacted(
      path.join(dir, 'sign-in-failures.jsonl'),
      (e) => {
        if (typeof e.k !== 'string') return;
        if (e.clear) f.map.delete(e.k);
        else if (e.release) f.takeBack(e.k, Number(e.at));
        else f.map.set(e.k, [...(f.map.get(e.k) ?? []), Number(e.at)]);
      },
      () => {
        const out: unknown[] = [];
        for (const [k, list] of f.map) {
          const recent = list.filter((at) => at > now - 86_400_000);
          if (recent.length) f.map.set(k, recent);
          else f.map.delete(k);
          for (const at of recent) out.push({ k, at });
        }
        return out;
      },
    );
    return f;
  }

  async reserve(keys: readonly string[], since: number, at: number, admit: (failures: number[][]) => number): Promise<number> {
    // D-165: one data directory has one process (D-76's lock), so reading and counting with no await
    // between them is the whole of "one at a time": the next request sees this reservation.
    const wait = admit(keys.map((k) => (this.map.get(k) ?? []).filter((t) => t >= since)));
    if (wait > 0) return wait;
    for (const k of keys) this.map.set(k, [...(this.map.get(k) ?? []), at]);
    // Queued together: the journal's group commit makes them one write and one fsync.
    await Promise.all(keys.map((k) => this.journal.append({ k, at })));
    return 0;
  }

  async release(key: string, at: number): Promise<void> {
    if (!this.takeBack(key, at)) return;
    await this.journal.append({ k: key, at, release: true });
  }

  async clear(key: string): Promise<void> {
    if (!this.map.has(key)) return;
    await this.journal.append({ k: key, clear: true });
    this.map.delete(key);
  }

  /** Removes one failure of `key` at `at`; whether there was one. */
  private takeBack(key: string, at: number): boolean {
    const list = this.map.get(key);
    const i = list?.indexOf(at) ?? -1;
    if (!list || i < 0) return false;
    list.splice(i, 1);
    if (!list.length) this.map.delete(key);
    return true;
  }

  close(): Promise<void> {
    return this.journal.close();
  }
}

/** D-70: `key-use.jsonl`, lines `{id, at}` (Unix seconds); one line per id after open. */
export class FileKeyUse {
  private readonly map = new Map<string, number>();
  private journal!: Journal;

  static async open(dir: string): Promise<FileKeyUse> {
    const k = new FileKeyUse();
    k.journal = await openCompacted(
      path.join(dir, 'key-use.jsonl'),
      (e) => {
        if (typeof e.id === 'string' && Number(e.at) > (k.map.get(e.id) ?? 0)) k.map.set(e.id, Number(e.at));
      },
      () => [...k.map].map(([id, at]) => ({ id, at })),
    );
    return k;
  }

  async write(uses: Map<string, number>): Promise<void> {
    await Promise.all([...uses].map(([id, at]) => this.journal.append({ id, at })));
    for (const [id, at] of uses) if (at > (this.map.get(id) ?? 0)) this.map.set(id, at);
  }

  async read(ids: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const id of ids) {
      const at = this.map.get(id);
      if (at !== undefined) out.set(id, at);
    }
    return out;
  }

  close(): Promise<void> {
    return this.journal.close();
  }
}
