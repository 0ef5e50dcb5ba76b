// `parley data export|import` on the file store (docs/data.md). The store is opened as the server
// opens it, so its LOCK refuses a directory a running Parley serves. An export walks the in-memory
// index app by app and reads one history at a time; usage comes from `usage.jsonl`. An import reads
// the file twice: first to check every line and every id against the store (a clash changes
// nothing), then to write it through the bulk path, a batch at a time.
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import type { ControlDocT } from '../../core/control.ts';
import type { AuditRecord } from '../control.ts';
import { FileAuditLog } from '../file/control.ts';
import { syncDir, writeDurably } from '../file/durable.ts';
import { FileStore } from '../file/file-store.ts';
import { Journal } from '../file/journal.ts';
import type { History, ConversationRecord } from '../types.ts';
import {
  ExportReader,
  ImportError,
  UsageEntrySchema,
  conversationLine,
  endLine,
  headerLine,
  noCounts,
  plainRecord,
  usageKey,
  usageLine,
  type DataPort,
  type ImportEntry,
  type LineSource,
  type PortCounts,
  type UsageEntry,
} from './format.ts';
import { auditLine, controlLine, importedVersion, parseControl, replaceableProblem } from './control-lines.ts';

/** An export or an import reads the whole audit log: the retention is the server's to apply. */
const KEEP_ALL_DAYS = 1_000_000;

/** Written through importConversations in batches of this many, or of this many history bytes. */
const BATCH_CONVERSATIONS = 256;
const BATCH_BYTES = 16 * 2 ** 20;

export class FilePort implements DataPort {
  readonly kind = 'file' as const;
  private readonly store: FileStore;
  private readonly usageFile: string;

  private constructor(readonly dataDir: string) {
    this.store = new FileStore({ dataDir });
    this.usageFile = path.join(path.resolve(dataDir), 'usage.jsonl');
  }

  /** Opens the data directory (taking its LOCK: a served directory is refused with a DirLockedError). */
  static async open(dataDir: string): Promise<FilePort> {
    const port = new FilePort(dataDir);
    await port.store.open();
    return port;
  }

  close(): Promise<void> {
    return this.store.close();
  }

  /** `control.json` (undefined in a directory no server with a control plane has opened) and the audit log. */
  private async control(): Promise<{ doc: ControlDocT | undefined; audit: FileAuditLog }> {
    const file = path.join(this.store.dataDir, 'control.json');
    let doc: ControlDocT | undefined;
    if (fs.existsSync(file)) {
      const read = parseControl(JSON.parse(await fs.promises.readFile(file, 'utf8')));
      if ('problem' in read) throw new Error(`${file}: ${read.problem}`);
      doc = read.doc;
    }
    const audit = new FileAuditLog(Date.now);
    await fs.promises.mkdir(path.join(this.store.dataDir, 'control'), { recursive: true });
    await audit.open(path.join(this.store.dataDir, 'control', 'audit.jsonl'), doc?.version ?? 0, KEEP_ALL_DAYS);
    return { doc, audit };
  }

  async *export(apps?: ReadonlyMap<string, string>): AsyncGenerator<string, PortCounts> {
    const counts = noCounts();
    yield headerLine('file', apps);
    const { doc, audit } = await this.control();
    try {
      if (doc) {
        counts.control++;
        yield controlLine(doc);
      }
      for (const a of [...audit.entries]) {
        counts.audit++;
        yield auditLine(a);
      }
    } finally {
      await audit.close();
    }
    for (const app of this.store.appIds()) {
      // A copy: the walk awaits each history, and nothing else writes while the LOCK is ours.
      const records = [...(await this.store.conversationsOf(app))];
      for (const r of records) {
        // D-73: a deleted conversation's kept history goes with it; a purged one has none, nor metadata.
        const purged = (await this.store.admin.get(r.id))?.purgedAt != null;
        const file = purged ? { items: [], responses: [] } : await this.store.readHistory(r.id);
        counts.conversations++;
        counts.items += file.items.length;
        counts.responses += file.responses.length;
        yield conversationLine(purged ? { ...plainRecord(r), metadata: {} } : r, file.items, file.responses);
      }
    }
    for await (const u of this.usageEntries()) {
      counts.usage++;
      yield usageLine(u);
    }
    yield endLine(counts);
    return counts;
  }

  /**
   * The ledger's entries in the order written. A last line cut short by a crash (no newline, not
   * JSON) was never acknowledged and is skipped, as the ledger drops it at start; any other bad line
   * is an error naming the file and line.
   */
  private async *usageEntries(): AsyncGenerator<UsageEntry> {
    if (!fs.existsSync(this.usageFile)) return;
    const lines = readline.createInterface({ input: fs.createReadStream(this.usageFile), crlfDelay: Infinity });
    let n = 0;
    let pending: { raw: string; n: number } | undefined;
    const parse = ({ raw, n }: { raw: string; n: number }) => {
      let v: unknown;
      try {
        v = JSON.parse(raw);
      } catch {
        throw new Error(`${this.usageFile}: line ${n} is not valid JSON`);
      }
      const parsed = UsageEntrySchema.safeParse(v);
      if (!parsed.success)
        throw new Error(`${this.usageFile}: line ${n}: ${parsed.error.issues[0]!.path.join('.')}: ${parsed.error.issues[0]!.message}`);
      return parsed.data;
    };
    for await (const raw of lines) {
      n++;
      if (pending) yield parse(pending);
      pending = raw.trim() === '' ? undefined : { raw, n };
    }
    if (pending) {
      const endsWithNewline = await lastByteIsNewline(this.usageFile);
      try {
        yield parse(pending);
      } catch (err) {
        if (endsWithNewline) throw err;
      }
    }
  }

  async import(source: LineSource, apps?: ReadonlyMap<string, string>): Promise<PortCounts> {
    // The usage ledger is read (and a torn last line cut, as at the server's start) before anything is checked.
    const usage = new Journal(this.usageFile);
    const usageKeys = new Set<string>();
    await usage.open((e) => {
      const parsed = UsageEntrySchema.safeParse(e);
      if (parsed.success) usageKeys.add(usageKey(parsed.data));
    });
    try {
      // Pass 1: the whole file is checked, and every id against the store, before anything is written.
      const check = new ExportReader(apps);
      const target = await this.control();
      const auditIds = new Set(target.audit.entries.map((a) => a.id));
      const actions = new Map<string, number>();
      for (const a of target.audit.entries) actions.set(a.action, (actions.get(a.action) ?? 0) + 1);
      await target.audit.close();
      for await (const raw of source()) {
        const e = check.read(raw);
        if (e?.type === 'control') {
          const problem = replaceableProblem(
            [...actions].map(([action, n]) => ({ action, n })),
            this.dataDir,
          );
          if (problem) throw new ImportError(e.line, problem);
        }
        if (e?.type === 'audit' && auditIds.has(e.entry.id))
          throw new ImportError(e.line, `audit entry ${e.entry.id} already exists in ${this.dataDir}; nothing was imported`);
        if (e?.type === 'conversation' && (await this.store.getConversation(e.record.id)))
          throw new ImportError(e.line, `conversation ${e.record.id} already exists in ${this.dataDir}; nothing was imported`);
        if (e?.type === 'usage' && usageKeys.has(usageKey(e.usage)))
          throw new ImportError(e.line, `usage of ${e.usage.kind} ${e.usage.id} already exists in ${this.dataDir}; nothing was imported`);
      }
      const counts = check.finish();
      // Pass 2: D-7, after the store's own conversations, in the file's order (seq offset by the store's last).
      const offset = (await this.store.nextSeq()) - 1;
      const write = new ExportReader();
      let batch: Array<{ record: ConversationRecord; file?: History }> = [];
      let bytes = 0;
      const flush = async () => {
        if (batch.length > 0) await this.store.importConversations(batch);
        batch = [];
        bytes = 0;
      };
      let usageBatch: Promise<unknown>[] = [];
      let doc: ControlDocT | undefined;
      const entries: AuditRecord[] = [];
      for await (const raw of source()) {
        const e: ImportEntry | undefined = write.read(raw);
        if (e?.type === 'control') doc = e.doc;
        else if (e?.type === 'audit') entries.push(e.entry);
        else if (e?.type === 'conversation') {
          const { record, items, responses } = e;
          const file = items.length > 0 || responses.length > 0 ? { items, responses } : undefined;
          batch.push({ record: { ...record, seq: offset + record.seq }, file });
          bytes += raw.length;
          if (batch.length >= BATCH_CONVERSATIONS || bytes >= BATCH_BYTES) await flush();
        } else if (e?.type === 'usage') {
          await flush();
          usageBatch.push(usage.append({ t: 'usage', ...e.usage }));
          if (usageBatch.length >= 1024) {
            await Promise.all(usageBatch);
            usageBatch = [];
          }
        }
      }
      await flush();
      await Promise.all(usageBatch);
      write.finish();
      if (entries.length > 0 || doc) await this.importControl(doc, target.doc, entries);
      return counts;
    } finally {
      await usage.close();
    }
  }

  /**
   * The control plane of an export (version 2): its audit entries appended to the journal (as entries
   * of no document version, D-76), then its document written durably over `control.json`, with a
   * version past both (D-78). A crash between the two leaves audit entries without the document: the
   * import is then made again into a new directory (docs/data.md).
   */
  private async importControl(doc: ControlDocT | undefined, current: ControlDocT | undefined, entries: AuditRecord[]): Promise<void> {
    const dir = path.join(this.store.dataDir, 'control');
    await fs.promises.mkdir(dir, { recursive: true });
    const journal = new Journal(path.join(dir, 'audit.jsonl'));
    await journal.open(() => {});
    try {
      await Promise.all(entries.map((a) => journal.append({ v: null, a })));
    } finally {
      await journal.close();
    }
    if (!doc) return;
    const file = path.join(this.store.dataDir, 'control.json');
    await writeDurably(file, `${JSON.stringify({ ...doc, version: importedVersion(doc, current) }, null, 1)}\n`);
    await syncDir(path.dirname(file));
  }
}

async function lastByteIsNewline(file: string): Promise<boolean> {
  const handle = await fs.promises.open(file, 'r');
  try {
    const { size } = await handle.stat();
    if (size === 0) return true;
    const b = Buffer.alloc(1);
    await handle.read(b, 0, 1, size - 1);
    return b[0] === 0x0a;
  } finally {
    await handle.close();
  }
}
