// The export format of `parley data export|import` (docs/data.md): NDJSON, one line each for a header,
// a conversation with its history, a usage entry, and an end line that counts them. Both stores write
// and read it here, so that a file written by one loads into the other.
import { z } from 'zod';
import { Item, isPlainObject, scanJson, type ItemT } from '../../contract/index.ts';
import { ConversationRecordSchema, type ConversationRecord } from '../record.ts';
import type { ResponseRecord } from '../types.ts';
import type { ControlDocT } from '../../core/control.ts';
import type { AuditRecord } from '../control.ts';
import { conversationProblem, usageProblem, type AppsOf } from './bounds.ts';
import { AuditRecordSchema, appsOfDoc, parseControl } from './control-lines.ts';

export const EXPORT_FORMAT = 'parley-export';
/**
 * Raised when a line changes meaning; a reader refuses a version it does not know. Version 2 adds the
 * control plane (a `control` line and `audit` lines, control-lines.ts); version 1 files still import.
 */
export const EXPORT_VERSION = 2;
const READS = [1, 2];

/** A usage line of `<data dir>/usage.jsonl` (src/store/file/usage.ts writes them), without its claim. */
export const UsageEntrySchema = z.object({
  app_id: z.string().min(1),
  kind: z.enum(['response', 'completion']),
  id: z.string().min(1),
  /** Unix seconds, as the ledger writes them. */
  at: z.number().int(),
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
});
export type UsageEntry = z.infer<typeof UsageEntrySchema>;

const ResponseRecordSchema = z.looseObject({
  id: z.string().min(1),
  created_at: z.number().int(),
  status: z.enum(['completed', 'failed']),
});

export interface PortCounts {
  conversations: number;
  items: number;
  responses: number;
  usage: number;
  /** Version 2: the control document's line (0 or 1) and the audit log's entries. */
  control: number;
  audit: number;
}

export const noCounts = (): PortCounts => ({ conversations: 0, items: 0, responses: 0, usage: 0, control: 0, audit: 0 });

export type StoreKind = 'file' | 'postgres';

/**
 * D-94: `apps` (id → team id, the source's tenants) lets an import check that each app it meets is
 * the target's and of the same team; a key older readers ignore, so the version stays 1.
 */
export function headerLine(source: StoreKind, apps?: ReadonlyMap<string, string>): string {
  const named = apps ? { apps: Object.fromEntries(apps) } : {};
  return JSON.stringify({ format: EXPORT_FORMAT, version: EXPORT_VERSION, exported_at: new Date().toISOString(), source, ...named });
}

/** The record's fields in the order the stores write them (a stored record may be a class: copied). */
export function plainRecord(r: ConversationRecord): ConversationRecord {
  return {
    id: r.id,
    app_id: r.app_id,
    seq: r.seq,
    created_at: r.created_at,
    external_user_id: r.external_user_id,
    title: r.title,
    generated_title: r.generated_title,
    metadata: r.metadata,
    deleted_at: r.deleted_at,
    message_count: r.message_count,
  };
}

/**
 * A conversation's line. Items and responses may be given as their JSON text (PostgreSQL keeps them
 * so): they are written as they are, keys in the order they were stored.
 */
export function conversationLine(
  record: ConversationRecord,
  items: readonly (ItemT | string)[],
  responses: readonly (ResponseRecord | string)[],
): string {
  const json = (x: unknown) => (typeof x === 'string' ? x : JSON.stringify(x));
  return `{"type":"conversation","record":${JSON.stringify(plainRecord(record))},"items":[${items.map(json).join(',')}],"responses":[${responses.map(json).join(',')}]}`;
}

export function usageLine(u: UsageEntry): string {
  const { app_id, kind, id, at, input_tokens, output_tokens } = u;
  return JSON.stringify({ type: 'usage', usage: { app_id, kind, id, at, input_tokens, output_tokens } });
}

export function endLine(c: PortCounts): string {
  return JSON.stringify({ type: 'end', ...c });
}

/** A file that cannot be imported: bad, cut short, or clashing with the store. `line` is 1-based. */
export class ImportError extends Error {
  constructor(
    readonly line: number,
    detail: string,
  ) {
    super(`line ${line}: ${detail}`);
    this.name = 'ImportError';
  }
}

export type ImportEntry =
  | { type: 'conversation'; line: number; record: ConversationRecord; items: ItemT[]; responses: ResponseRecord[] }
  | { type: 'usage'; line: number; usage: UsageEntry }
  | { type: 'control'; line: number; doc: ControlDocT }
  | { type: 'audit'; line: number; entry: AuditRecord };

export const usageKey = (u: { kind: string; id: string }) => `${u.kind} ${u.id}`;

const issue = (e: z.ZodError, prefix: string) => {
  const i = e.issues[0]!;
  return `${[prefix, ...i.path].join('.')}: ${i.message}`;
};

/**
 * Reads an export line by line and checks everything that does not depend on the target store: the
 * header and its version, each line's shape, ids unique in the file, creation order (`seq` rising
 * within an app), and the end line's counts. Holds the ids seen (to find a repeat), never the data.
 */
export class ExportReader {
  readonly counts = noCounts();
  private line = 0;
  private started = false;
  private ended = false;
  private readonly ids = new Set<string>();
  private readonly usageKeys = new Set<string>();
  private readonly auditIds = new Set<string>();
  /** The format version of the file (its header's). */
  version = 0;
  /** Whether a line other than the header and the control line came already. */
  private pastControl = false;
  private readonly lastSeq = new Map<string, number>();
  /** The largest `seq` read: imports place the file's conversations after the store's. */
  maxSeq = 0;
  private readonly apps: AppsOf;

  /** `target`: the apps of the store imported into (id → team id); without it, apps are not checked. */
  constructor(target?: ReadonlyMap<string, string>) {
    this.apps = { target };
  }

  /** The entry of the next line (undefined for the header, the end line and blank lines). */
  read(raw: string): ImportEntry | undefined {
    const n = ++this.line;
    if (raw.trim() === '') return undefined;
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch {
      throw new ImportError(n, 'is not valid JSON');
    }
    if (!this.started) return this.header(v, n);
    if (this.ended) throw new ImportError(n, 'comes after the end line');
    if (!isPlainObject(v)) throw new ImportError(n, 'is not a JSON object');
    // D-94: as on the API, before zod's copies drop a `__proto__` key or a number becomes null.
    const { unkept } = scanJson(v);
    if (unkept) throw new ImportError(n, `${unkept.path} ${unkept.why}`);
    if (this.version >= 2 && v.type === 'control') return this.control(v, n);
    this.pastControl = true;
    switch (v.type) {
      case 'conversation':
        return this.conversation(v, n);
      case 'usage':
        return this.usage(v, n);
      case 'end':
        this.end(v, n);
        return undefined;
      default:
        if (this.version >= 2 && v.type === 'audit') return this.audit(v, n);
        throw new ImportError(
          n,
          `type: ${JSON.stringify(v.type)} is not ${this.version >= 2 ? 'control, audit, conversation' : 'conversation'}, usage or end`,
        );
    }
  }

  /** Called after the last line: a file without its end line was cut short. */
  finish(): PortCounts {
    if (!this.started) throw new ImportError(1, 'the file is empty: not a Parley export');
    if (!this.ended) throw new ImportError(this.line, `the file ends without its end line: it was cut short (${this.line} lines read)`);
    return { ...this.counts };
  }

  private header(v: unknown, n: number): undefined {
    if (!isPlainObject(v) || v.format !== EXPORT_FORMAT)
      throw new ImportError(n, `not a Parley export (the first line must be {"format":"${EXPORT_FORMAT}","version":${EXPORT_VERSION},…})`);
    if (!READS.includes(v.version as number)) {
      const newer = typeof v.version === 'number' && v.version > EXPORT_VERSION;
      throw new ImportError(
        n,
        `format version ${JSON.stringify(v.version)} is not supported: this Parley reads versions ${READS.join(' and ')}${newer ? '; import it with the Parley that wrote it, or a newer one' : ''}`,
      );
    }
    if (v.apps !== undefined) {
      if (!isPlainObject(v.apps) || !Object.values(v.apps).every((t) => typeof t === 'string'))
        throw new ImportError(n, 'apps: expected an object of app ids to team ids');
      this.apps.file = new Map(Object.entries(v.apps as Record<string, string>));
    }
    this.version = v.version as number;
    this.started = true;
    return undefined;
  }

  /** Version 2: the control document, once, before any other line; the import then checks apps against it. */
  private control(v: Record<string, unknown>, n: number): ImportEntry {
    if (this.pastControl || this.counts.control > 0) throw new ImportError(n, 'a control line comes once, right after the header');
    const read = parseControl(v.document);
    if ('problem' in read) throw new ImportError(n, read.problem);
    // D-94: the import installs this document, so its apps are the ones the lines may name.
    this.apps.target = appsOfDoc(read.doc);
    this.teams = new Set(read.doc.teams.map((t) => t.id));
    this.counts.control++;
    return { type: 'control', line: n, doc: read.doc };
  }

  private teams: Set<string> | undefined;

  private audit(v: Record<string, unknown>, n: number): ImportEntry {
    const parsed = AuditRecordSchema.safeParse(v.entry);
    if (!parsed.success) throw new ImportError(n, issue(parsed.error, 'entry'));
    const entry = parsed.data;
    if (this.auditIds.has(entry.id)) throw new ImportError(n, `audit entry ${entry.id} appears twice in the file`);
    if (entry.team_id !== null && this.teams && !this.teams.has(entry.team_id))
      throw new ImportError(n, `entry.team_id: ${entry.team_id} is not a team of the file's control document`);
    this.auditIds.add(entry.id);
    this.counts.audit++;
    return { type: 'audit', line: n, entry };
  }

  private conversation(v: Record<string, unknown>, n: number): ImportEntry {
    const parsed = ConversationRecordSchema.safeParse(v.record);
    if (!parsed.success) throw new ImportError(n, issue(parsed.error, 'record'));
    const record = parsed.data;
    if (!Array.isArray(v.items)) throw new ImportError(n, 'items: expected an array');
    if (!Array.isArray(v.responses)) throw new ImportError(n, 'responses: expected an array');
    for (const [k, item] of (v.items as unknown[]).entries()) {
      const ok = Item.safeParse(item);
      if (!ok.success) throw new ImportError(n, issue(ok.error, `items.${k}`));
    }
    for (const [k, r] of (v.responses as unknown[]).entries()) {
      const ok = ResponseRecordSchema.safeParse(r);
      if (!ok.success) throw new ImportError(n, issue(ok.error, `responses.${k}`));
    }
    const problem = conversationProblem(record, v.items as ItemT[], v.responses as ResponseRecord[], this.apps);
    if (problem) throw new ImportError(n, problem);
    if (this.ids.has(record.id)) throw new ImportError(n, `conversation ${record.id} appears twice in the file`);
    this.ids.add(record.id);
    // Stores number from 1; an import adds the target's last seq, so 0 would tie with it.
    if (record.seq < 1) throw new ImportError(n, `record.seq: ${record.seq} of ${record.id} must be at least 1`);
    // D-7: the file holds each app's conversations in creation order; imports keep it.
    const last = this.lastSeq.get(record.app_id);
    if (last !== undefined && record.seq <= last)
      throw new ImportError(
        n,
        `record.seq: ${record.seq} of ${record.id} is not after ${last}, the seq of the app's previous conversation (the file lists an app's conversations in creation order)`,
      );
    this.lastSeq.set(record.app_id, record.seq);
    if (record.seq > this.maxSeq) this.maxSeq = record.seq;
    this.counts.conversations++;
    this.counts.items += v.items.length;
    this.counts.responses += v.responses.length;
    // The original values, not zod's copies: unknown keys of an item stay as they were.
    return { type: 'conversation', line: n, record, items: v.items as ItemT[], responses: v.responses as ResponseRecord[] };
  }

  private usage(v: Record<string, unknown>, n: number): ImportEntry {
    const parsed = UsageEntrySchema.safeParse(v.usage);
    if (!parsed.success) throw new ImportError(n, issue(parsed.error, 'usage'));
    const problem = usageProblem(parsed.data, this.apps);
    if (problem) throw new ImportError(n, problem);
    const key = usageKey(parsed.data);
    if (this.usageKeys.has(key)) throw new ImportError(n, `usage of ${parsed.data.kind} ${parsed.data.id} appears twice in the file`);
    this.usageKeys.add(key);
    this.counts.usage++;
    return { type: 'usage', line: n, usage: parsed.data };
  }

  private end(v: Record<string, unknown>, n: number): void {
    const keys = ['conversations', 'items', 'responses', 'usage', ...(this.version >= 2 ? (['control', 'audit'] as const) : [])] as const;
    for (const k of keys) {
      if (v[k] !== this.counts[k])
        throw new ImportError(n, `the end line counts ${JSON.stringify(v[k])} ${k}, the file holds ${this.counts[k]}: lines are missing`);
    }
    this.ended = true;
  }
}

/** A source of an export's lines that can be read more than once (the file store reads it twice). */
export type LineSource = () => AsyncIterable<string>;

/** What both stores offer `parley data` (src/store/port/index.ts opens the one configured). */
export interface DataPort {
  readonly kind: StoreKind;
  /**
   * The export, line by line, from one consistent view; its return value counts what it wrote.
   * `apps`: the source's apps (id → team id), named in the header for an import to check (D-94).
   */
  export(apps?: ReadonlyMap<string, string>): AsyncGenerator<string, PortCounts>;
  /**
   * Loads an export: conversations after the store's own, in the file's order, and their usage.
   * A bad line or a clash (an id the store has) throws an ImportError before anything is written.
   * `apps`: the target's apps (id → team id); a line naming another is refused (D-94).
   */
  import(source: LineSource, apps?: ReadonlyMap<string, string>): Promise<PortCounts>;
  close(): Promise<void>;
}
