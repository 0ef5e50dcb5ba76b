// `parley data import` into PostgreSQL (docs/data.md): the lines of an export inserted in batches within
// one transaction (pg-port.ts holds it), conversations numbered after the database's own, the apps'
// stats recounted and the control document replaced at the end.
import type { ReservedSql, Sql } from 'postgres';
import type { ControlDocT } from '../../core/control.ts';
import { CONTROL_CHANNEL } from '../pg/control.ts';
import { recountAppStats } from '../pg/pg-store.ts';
import { ExportReader, ImportError, type ImportEntry, type LineSource, type PortCounts } from './format.ts';
import { importedVersion, parseControl, replaceableProblem } from './control-lines.ts';

/** History bytes an export fetches per query (pg-port.ts), and an import holds before it inserts them. */
export const HISTORY_CHUNK_BYTES = 16 * 2 ** 20;
/** Conversations per INSERT of an import (13 parameters each; PostgreSQL allows 65,535 per statement). */
const INSERT_BATCH = 500;
/** Items or responses per INSERT (3 or 4 parameters each). */
const ROW_BATCH = 5_000;

/** The bytes a history counts (D-29), as the PostgreSQL store counts an appended one: each JSON line. */
const lineBytes = (bodies: readonly string[]) => bodies.reduce((n, b) => n + Buffer.byteLength(b) + 1, 0);

/** Every line of `source` into the database, within the caller's transaction `tx`. */
export async function importLines(tx: ReservedSql, source: LineSource, target?: ReadonlyMap<string, string>): Promise<PortCounts> {
  // A sequence of migration 4 numbers conversations when it exists; imports come after its last value.
  const [{ seq }] = await tx<[{ seq: string | null }]>`SELECT to_regclass('conversation_seq')::text AS seq`;
  const [{ base }] = seq
    ? await tx<
        [{ base: string }]
      >`SELECT greatest((SELECT coalesce(max(seq), 0) FROM conversations), (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM conversation_seq)) AS base`
    : await tx<[{ base: string }]>`SELECT coalesce(max(seq), 0) AS base FROM conversations`;
  const offset = Number(base);
  const reader = new ExportReader(target);
  let batch: Extract<ImportEntry, { type: 'conversation' }>[] = [];
  let usage: Extract<ImportEntry, { type: 'usage' }>[] = [];
  const flush = async () => {
    try {
      if (batch.length > 0) await insertConversations(tx, batch, offset);
      if (usage.length > 0) await insertUsage(tx, usage);
    } catch (err) {
      // D-94: the bounds keep every value within its column; should the database refuse one still,
      // the refusal names the lines of the batch it was in, not only the database's words.
      if (err instanceof ImportError) throw err;
      const lines = [...batch, ...usage].map((e) => e.line);
      throw new ImportError(
        Math.min(...lines),
        `the database refused a line from here to line ${Math.max(...lines)}: ${(err as Error).message}`,
      );
    }
    batch = [];
    usage = [];
  };
  let pending = 0;
  const apps = new Set<string>();
  let doc: ControlDocT | undefined;
  for await (const raw of source()) {
    const e = reader.read(raw);
    if (e?.type === 'control') {
      const actions = await tx<{ action: string; n: string }[]>`SELECT action, count(*)::text AS n FROM audit_log GROUP BY action`;
      const problem = replaceableProblem(
        actions.map((a) => ({ action: a.action, n: Number(a.n) })),
        'the database',
      );
      if (problem) throw new ImportError(e.line, problem);
      doc = e.doc;
    } else if (e?.type === 'audit') await insertAudit(tx, e);
    else if (e?.type === 'conversation') {
      batch.push(e);
      apps.add(e.record.app_id);
      pending += raw.length;
    } else if (e?.type === 'usage') usage.push(e);
    if (batch.length >= INSERT_BATCH || usage.length >= ROW_BATCH || pending >= HISTORY_CHUNK_BYTES) {
      await flush();
      pending = 0;
    }
  }
  await flush();
  const counts = reader.finish();
  if (seq && reader.maxSeq > 0)
    await tx`SELECT setval('conversation_seq', greatest(${offset + reader.maxSeq}, (SELECT last_value FROM conversation_seq)))`;
  // D-24 and D-27 read the apps' stats rows, which rows written by SQL do not keep by themselves.
  if (apps.size > 0 && seq) await recountAppStats(tx as unknown as Sql, [...apps]);
  if (doc) await replaceControl(tx, doc);
  return counts;
}

/** The export's document replaces the database's, its version past both; running instances reload it (D-78). */
async function replaceControl(tx: ReservedSql, doc: ControlDocT): Promise<void> {
  const [row] = await tx<{ body: string }[]>`SELECT body::text AS body FROM control_document WHERE id = 1 FOR UPDATE`;
  const current = row ? parseControl(JSON.parse(row.body)) : undefined;
  const next = { ...doc, version: importedVersion(doc, current && 'doc' in current ? current.doc : undefined) };
  await tx`INSERT INTO control_document (id, version, body) VALUES (1, ${next.version}, ${JSON.stringify(next)}::text::jsonb)
           ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, body = EXCLUDED.body`;
  await tx`SELECT pg_notify(${CONTROL_CHANNEL}, ${String(next.version)})`;
}

/** One audit entry, in the file's order (the log's `seq` follows it); an id the database has is a clash. */
async function insertAudit(tx: ReservedSql, e: Extract<ImportEntry, { type: 'audit' }>): Promise<void> {
  const a = e.entry;
  const made = await tx`INSERT INTO audit_log (id, team_id, action, created_at, body)
                        VALUES (${a.id}, ${a.team_id}, ${a.action}, ${a.created_at}, ${JSON.stringify(a)}::text::jsonb)
                        ON CONFLICT (id) DO NOTHING RETURNING id`;
  if (made.length === 0) throw new ImportError(e.line, `audit entry ${a.id} already exists in the database; nothing was imported`);
}

async function insertConversations(
  tx: ReservedSql,
  batch: Extract<ImportEntry, { type: 'conversation' }>[],
  offset: number,
): Promise<void> {
  const itemRows: { conversation_id: string; pos: number; body: string }[] = [];
  const responseRows: { conversation_id: string; pos: number; id: string; body: string }[] = [];
  const rows = batch.map(({ record: r, items, responses }) => {
    const itemBodies = items.map((i) => JSON.stringify(i));
    const responseBodies = responses.map((x) => JSON.stringify(x));
    for (const [pos, body] of itemBodies.entries()) itemRows.push({ conversation_id: r.id, pos, body });
    for (const [pos, body] of responseBodies.entries()) responseRows.push({ conversation_id: r.id, pos, id: responses[pos]!.id, body });
    return {
      id: r.id,
      app_id: r.app_id,
      seq: offset + r.seq,
      created_at: r.created_at,
      external_user_id: r.external_user_id,
      title: r.title,
      generated_title: JSON.stringify(r.generated_title),
      metadata: JSON.stringify(r.metadata),
      deleted_at: r.deleted_at,
      // D-73: a deleted conversation imported with its history keeps it; without one it reads as purged.
      purged_at: r.deleted_at !== null && items.length === 0 && responses.length === 0 ? r.deleted_at : null,
      message_count: r.message_count,
      history_bytes: lineBytes(itemBodies) + lineBytes(responseBodies),
      item_count: items.length,
      last_item_at: items.at(-1)?.created_at ?? 0,
    };
  });
  const columns = [
    'id',
    'app_id',
    'seq',
    'created_at',
    'external_user_id',
    'title',
    'generated_title',
    'metadata',
    'deleted_at',
    'purged_at',
    'message_count',
    'history_bytes',
    'item_count',
    'last_item_at',
  ] as const;
  const inserted = await tx<{ id: string }[]>`INSERT INTO conversations ${tx(rows, ...columns)} ON CONFLICT (id) DO NOTHING RETURNING id`;
  if (inserted.length < rows.length) {
    const got = new Set(inserted.map((r) => r.id));
    const clash = batch.find((e) => !got.has(e.record.id))!;
    throw new ImportError(clash.line, `conversation ${clash.record.id} already exists in the database; nothing was imported`);
  }
  for (let i = 0; i < itemRows.length; i += ROW_BATCH)
    await tx`INSERT INTO items ${tx(itemRows.slice(i, i + ROW_BATCH), 'conversation_id', 'pos', 'body')}`;
  for (let i = 0; i < responseRows.length; i += ROW_BATCH)
    await tx`INSERT INTO responses ${tx(responseRows.slice(i, i + ROW_BATCH), 'conversation_id', 'pos', 'id', 'body')}`;
}

async function insertUsage(tx: ReservedSql, entries: Extract<ImportEntry, { type: 'usage' }>[]): Promise<void> {
  const rows: Record<string, string | number>[] = entries.map((e) => ({ ...e.usage }));
  const inserted = await tx<
    { kind: string; id: string }[]
  >`INSERT INTO usage_entries ${tx(rows, 'app_id', 'kind', 'id', 'at', 'input_tokens', 'output_tokens')} ON CONFLICT (kind, id) DO NOTHING RETURNING kind, id`;
  if (inserted.length < rows.length) {
    const got = new Set(inserted.map((r) => `${r.kind} ${r.id}`));
    const clash = entries.find((e) => !got.has(`${e.usage.kind} ${e.usage.id}`))!;
    throw new ImportError(
      clash.line,
      `usage of ${clash.usage.kind} ${clash.usage.id} already exists in the database; nothing was imported`,
    );
  }
}
