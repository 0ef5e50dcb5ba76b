// Start-up of the file store: the journal read into the index, every line checked (D-25, D-28), the
// data directory swept of what a crash left (temporary files) or what the journal lost (histories with
// no record), and the exchanges a crash cut settled.
import fs from 'node:fs/promises';
import path from 'node:path';
import { DataFileError } from '../../core/errors.ts';
import type { ConversationRecord } from '../types.ts';
import type { OutboxEvent } from '../webhooks.ts';
import type { ClaimLog } from './claims.ts';
import type { ConversationIndex } from './conversations.ts';
import type { HistoryCache } from './history-cache.ts';
import type { HistoryFile } from './history-file.ts';
import type { Journal } from './journal.ts';
import type { LineAt } from './journal-io.ts';
import { Entries, type EntryT, type Exchange, type FieldsT, isPlainEntry, schemaOf } from './lines.ts';

/**
 * Reads every line of the journal into `index` (and the claims it holds into `claims`); returns the
 * exchanges a crash cut (an intent without its `done`), for the store to settle.
 */
export async function replayJournal(
  journal: Journal,
  index: ConversationIndex,
  claims: ClaimLog,
  /** D-84: the webhook events a line carries (`w`), written with the change they report. */
  onEvents?: (events: OutboxEvent[]) => void,
): Promise<Map<string, Exchange>> {
  const replay = new Replay(journal.file, index, claims);
  await journal.open((entry, line, where) => {
    replay.line(entry, line, where);
    const w = (entry as { w?: unknown }).w;
    if (onEvents && Array.isArray(w)) onEvents(w as OutboxEvent[]);
  });
  return replay.unfinished;
}

class Replay {
  readonly unfinished = new Map<string, Exchange>();

  constructor(
    private readonly file: string,
    private readonly index: ConversationIndex,
    private readonly claims: ClaimLog,
  ) {}

  line(entry: unknown, line: number, where: LineAt): void {
    if (isPlainEntry(entry)) {
      this.checkVersion(entry.v, line);
      this.index.add(this.index.fromRecord(entry.v, where, entry.b ?? 0, entry.purged_at));
      return;
    }
    const schema = schemaOf(entry);
    const parsed = schema ? schema.safeParse(entry) : Entries.conv.safeParse(entry);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new DataFileError(this.file, `line ${line}: ${issue.path.join('.') || 'entry'}: ${issue.message}`);
    }
    this.apply(parsed.data, line, where);
  }

  private apply(e: EntryT, line: number, where: LineAt): void {
    const known = (id: string) => {
      const h = this.index.records.get(id);
      if (!h) throw this.badLine(line, `${id} has no earlier line (a change of a conversation that was never created)`);
      return h;
    };
    switch (e.t) {
      case 'conv':
        this.checkVersion(e.v, line);
        // A pre-D-28 completion: its record is whole.
        if (e.p !== undefined) this.unfinished.delete(e.p);
        if (e.c) this.claims.add({ key: e.c.k, fingerprint: e.c.f, at: e.c.at });
        this.index.add(this.index.fromRecord(e.v, where, e.b ?? this.index.records.get(e.v.id)?.file_bytes ?? 0, e.purged_at));
        return;
      case 'set':
        this.index.add(this.index.changed(known(e.id), e.f, 0, 0, where));
        return;
      case 'intent':
        if ('v' in e) {
          // Pre-D-28: the whole record the exchange would give; what it changes is what differs.
          this.checkVersion(e.v, line);
          const base = this.index.records.get(e.v.id);
          const f: FieldsT = { metadata: e.v.metadata };
          if (base && JSON.stringify(base.generated_title) !== JSON.stringify(e.v.generated_title)) f.generated_title = e.v.generated_title;
          if (base && base.title !== e.v.title) f.title = e.v.title;
          this.unfinished.set(e.p, {
            id: e.v.id,
            p: e.p,
            f,
            n: e.v.message_count - (base?.message_count ?? 0),
            b: 0,
            c: e.c,
            where,
            whole: base ? undefined : e.v,
          });
        } else {
          known(e.id);
          this.unfinished.set(e.p, { id: e.id, p: e.p, f: e.f, n: e.n, b: e.b, c: e.c, where });
        }
        return;
      case 'done': {
        const x = this.unfinished.get(e.p);
        if (!x || x.id !== e.id) throw this.badLine(line, `p: no earlier intent of ${e.id} for ${e.p}`);
        this.unfinished.delete(e.p);
        if (e.c) this.claims.add({ key: e.c.k, fingerprint: e.c.f, at: e.c.at });
        this.index.add(this.index.changed(known(e.id), x.f, x.n, x.b, x.where));
        return;
      }
      case 'claim':
        this.claims.add({ key: e.c.k, fingerprint: e.c.f, at: e.c.at });
        return;
    }
  }
  /** The rules between lines (see ConversationIndex.checkVersion). */
  private checkVersion(v: ConversationRecord, line: number): void {
    const problem = this.index.checkVersion(v);
    if (problem) throw this.badLine(line, problem);
  }

  private badLine(line: number, detail: string): DataFileError {
    return new DataFileError(this.file, `line ${line}: ${detail}; restore the file from a backup or fix that line`);
  }
}

/**
 * One pass over the data directory and the conversation folders: removes the temporary files a
 * crash left (`*.tmp`; no write is under way, the LOCK is ours) and the history files of purged
 * conversations (a crash between the purge's journal line and the file's removal, D-73), and refuses
 * to start if a history file has no record in the journal, which has then lost lines (D-25). Returns
 * the conversations whose history has a document of the earlier release, `<id>.json` (D-163).
 */
export async function sweepDataDir(dataDir: string, journalFile: string, index: ConversationIndex): Promise<Set<string>> {
  const isKnown = (id: string) => {
    const r = index.records.get(id);
    return r !== undefined && (r.purged_at === null || 'purged');
  };
  const root = path.join(dataDir, 'conversations');
  const orphans: string[] = [];
  const legacy = new Set<string>();
  const scan = async (dir: string, isShard: boolean) => {
    let names: string[];
    try {
      names = await fs.readdir(dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      throw new DataFileError(dir, `cannot be read (${code})`);
    }
    for (const name of names) {
      if (name.endsWith('.tmp')) await fs.rm(path.join(dir, name), { force: true });
      else if (isShard) {
        const id = name.endsWith('.jsonl') ? name.slice(0, -6) : name.endsWith('.json') ? name.slice(0, -5) : undefined;
        const known = id === undefined || isKnown(id);
        if (known === 'purged') await fs.rm(path.join(dir, name), { force: true });
        else if (!known) orphans.push(path.join(dir, name));
        else if (id !== undefined && name.endsWith('.json')) legacy.add(id);
      }
    }
  };
  await scan(dataDir, false);
  const shards = await fs.readdir(root).catch(() => [] as string[]);
  await Promise.all(shards.map((s) => scan(path.join(root, s), true)));
  if (orphans.length > 0) {
    orphans.sort();
    const named = orphans
      .slice(0, 3)
      .map((f) => path.relative(dataDir, f))
      .join(', ');
    throw new DataFileError(
      journalFile,
      `has no record of ${orphans.length} conversation file${orphans.length === 1 ? '' : 's'} (${named}${orphans.length > 3 ? ', …' : ''}): ` +
        `it has lost lines (cut short, replaced by an older copy, or removed). Restore it from a backup; or, to start without ` +
        `${orphans.length === 1 ? 'that conversation' : 'those conversations'}, move ${orphans.length === 1 ? 'its file' : 'their files'} out of ${root}`,
    );
  }
  return legacy;
}

/**
 * Exchanges cut by a crash: kept whole if their history write landed, forgotten whole if not. A
 * history that cannot be read affects only its conversation (D-25): its exchange stays open (kept by
 * a compaction) until the file can be read, and start-up goes on.
 */
export async function settleExchanges(
  unfinished: ReadonlyMap<string, Exchange>,
  store: {
    journal: Journal;
    index: ConversationIndex;
    claims: ClaimLog;
    histories: HistoryCache;
    /** Where an exchange left unsettled is kept, for a compaction to keep its intent. */
    openIntents: Map<string, Exchange>;
    warn: (message: string) => void;
  },
): Promise<void> {
  const { journal, index, claims, histories, openIntents, warn } = store;
  for (const x of unfinished.values()) {
    let h: HistoryFile;
    try {
      h = await histories.get(x.id);
    } catch (err) {
      openIntents.set(x.p, x);
      warn(
        `${(err as Error).message}; the exchange ${x.p} cut by a crash stays unsettled until the file can be read (the conversation's reads fail until then)`,
      );
      continue;
    }
    const landed = h.responses.some((r) => r.id === x.p) || h.items.some((i) => (i as { response_id?: string }).response_id === x.p);
    if (!landed) continue;
    if (x.whole && !index.records.has(x.id)) {
      const v = x.whole;
      await journal.append({ t: 'conv', v }, (where) => index.add(index.fromRecord(v, where, 0)));
    }
    await journal.append(x.c ? { t: 'done', id: x.id, p: x.p, c: x.c } : { t: 'done', id: x.id, p: x.p }, () => {
      if (x.c) claims.add({ key: x.c.k, fingerprint: x.c.f, at: x.c.at });
      index.add(index.changed(index.records.get(x.id)!, x.f, x.n, x.b, x.where));
    });
  }
}
