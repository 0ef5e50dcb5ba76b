// `parley data export|import` in the store layer (src/store/port/, docs/data.md): a data set with every
// kind of thing in it goes file store → PostgreSQL → file store and comes back the same; a clash, a bad
// version or a file cut short changes nothing on either store; an import after existing data keeps both
// in creation order.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import postgres from 'postgres';
import type { ItemT } from '../../src/contract/index.ts';
import { FileUsageLedger } from '../../src/store/file/usage.ts';
import { DirLockedError, procStat } from '../../src/store/file/dir-lock.ts';
import { FileStore } from '../../src/store/file/file-store.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { MIGRATIONS } from '../../src/store/pg/migrate.ts';
import { FilePort, ImportError, openDataPort, type DataPort, type LineSource } from '../../src/store/port/index.ts';
import type { ConversationRecord, Store } from '../../src/store/types.ts';
import { record as recordOf } from '../support/records.ts';
import { tempDir } from '../support/helpers.ts';
import { walk, walkIds } from '../support/list-walk.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

const SECOND = 1_700_000_000;
/** The data set's soft-deleted conversations: no list shows them, a read by id does (D-11). */
const DELETED = ['conv_gone'];

/** A new record (nextSeq awaited: it may read the database). */
async function record(store: Store, id: string, over: Partial<ConversationRecord> = {}): Promise<ConversationRecord> {
  return recordOf(id, { seq: await store.nextSeq(), created_at: SECOND, ...over });
}

const message = (id: string, role: 'user' | 'assistant', text: string, at: number, responseId?: string) =>
  ({
    id,
    type: 'message',
    role,
    content: [{ type: 'text', text }],
    created_at: at,
    ...(responseId ? { response_id: responseId } : {}),
  }) as unknown as ItemT;

/** An exchange: a user message, and an answer (completed) or none (failed, D-17). */
async function exchange(store: Store, id: string, p: string, at: number, failed = false, title?: Record<string, string>): Promise<void> {
  const items = [message(`msg_u${p}`, 'user', `question ${p} — ünïcødé`, at, p)];
  if (!failed) items.push(message(`msg_a${p}`, 'assistant', `answer ${p}`, at, p));
  await store.saveResponse({
    conversationId: id,
    items,
    response: failed
      ? { id: p, created_at: at, status: 'failed', error: { type: 'server_error', message: 'the model failed', code: 'model_error' } }
      : { id: p, created_at: at, status: 'completed', usage: { input_tokens: 5, output_tokens: 7, total_tokens: 12 } as never },
    apply: (r) => ({ message_count: r.message_count + items.length, ...(title ? { generated_title: title } : {}) }),
  });
}

/**
 * Every kind of thing an export holds: two apps interleaved, four conversations created in the same
 * second, custom and generated titles, metadata (keys in a given order), a user's conversations, a
 * soft-deleted one that had a history (kept, D-73: exported with it), completed and failed responses,
 * and usage of both kinds.
 */
async function seed(dataDir: string): Promise<void> {
  const store = new FileStore({ dataDir });
  await store.open();
  try {
    await store.putConversation(
      await record(store, 'conv_aaa4', { title: 'Custom title', metadata: { zeta: 1, alpha: { nested: [1, 'two', null] } } }),
    );
    await store.putConversation(await record(store, 'conv_aaa2', { external_user_id: 'user_1' }));
    await store.putConversation(await record(store, 'conv_other1', { app_id: 'app_other', created_at: SECOND - 10 }));
    await store.putConversation(await record(store, 'conv_aaa3', { external_user_id: 'user_1', metadata: { plan: 'pro' } }));
    await store.putConversation(await record(store, 'conv_aaa1'));
    await store.putConversation(await record(store, 'conv_gone', { created_at: SECOND + 5 }));
    await store.putConversation(await record(store, 'conv_other2', { app_id: 'app_other', created_at: SECOND + 9, title: 'Other' }));
    await exchange(store, 'conv_aaa4', 'resp_1', SECOND + 1);
    await exchange(store, 'conv_aaa2', 'resp_2', SECOND + 2, false, { en: 'A generated title' });
    await exchange(store, 'conv_aaa2', 'resp_3', SECOND + 3, true);
    await exchange(store, 'conv_gone', 'resp_4', SECOND + 6);
    await exchange(store, 'conv_other2', 'resp_5', SECOND + 10);
    await store.updateConversation('conv_gone', () => ({ deleted_at: SECOND + 7 }));
    await store.updateConversation('conv_aaa3', () => ({ title: 'Renamed' }));
  } finally {
    await store.close();
  }
  const usage = await FileUsageLedger.open(dataDir);
  await usage.record('app_demo', 'response', 'resp_1', { input_tokens: 5, output_tokens: 7, total_tokens: 12 } as never);
  await usage.record('app_demo', 'response', 'resp_2', { input_tokens: 5, output_tokens: 7, total_tokens: 12 } as never);
  await usage.record('app_other', 'completion', 'cmpl_1', { input_tokens: 3, output_tokens: 4, total_tokens: 7 } as never, {
    key: 'k',
    fingerprint: 'f',
  });
  await usage.close();
}

async function exportOf(port: DataPort): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of port.export()) lines.push(line);
  return lines;
}

const fromLines = (lines: readonly string[]): LineSource =>
  async function* () {
    yield* lines;
  };

/** An export's data: everything but the header (which names its source and time). */
const body = (lines: string[]) => lines.slice(1);

async function withPort<T>(where: { dataDir: string } | { databaseUrl: string }, fn: (port: DataPort) => Promise<T>): Promise<T> {
  const port = await openDataPort(where);
  try {
    return await fn(port);
  } finally {
    await port.close();
  }
}

/**
 * What a store serves: every app's records in list order (walked page by page, as the API lists),
 * each with its history, then the soft-deleted ones read by id (D-11), and the counters.
 */
async function served(store: Store, apps: string[]): Promise<unknown> {
  const out: Record<string, unknown> = {};
  const withHistory = async (r: ConversationRecord) => {
    const { items, responses } = await store.readHistory(r.id);
    return { ...JSON.parse(JSON.stringify(r)), items, responses };
  };
  for (const app of apps) {
    const list = [];
    for (const r of await walk(store, app)) list.push(await withHistory(r));
    for (const id of DELETED) {
      const r = await store.getConversation(id);
      if (r?.app_id === app) list.push(await withHistory(r));
    }
    out[app] = { list, counters: await store.appCounters(app), user: await walkIds(store, app, { externalUserId: 'user_1' }) };
  }
  return out;
}

async function servedBy(store: Store, apps: string[]): Promise<unknown> {
  await store.open();
  try {
    return await served(store, apps);
  } finally {
    await store.close();
  }
}

describe('a round trip file store → PostgreSQL → file store', () => {
  test('loses nothing: records, order within a second, titles, metadata, items, responses, deleted state, usage', async () => {
    const a = await tempDir();
    await seed(a);
    const first = await withPort({ dataDir: a }, exportOf);
    assert.deepEqual(JSON.parse(first[0]!), { ...JSON.parse(first[0]!), format: 'parley-export', version: 2, source: 'file' });
    assert.deepEqual(JSON.parse(first.at(-1)!), { type: 'end', conversations: 7, items: 9, responses: 5, usage: 3, control: 0, audit: 0 });

    const url = await freshDatabase();
    const imported = await withPort({ databaseUrl: url }, (p) => p.import(fromLines(first)));
    assert.deepEqual(imported, { conversations: 7, items: 9, responses: 5, usage: 3, control: 0, audit: 0 });
    const second = await withPort({ databaseUrl: url }, exportOf);
    assert.equal(JSON.parse(second[0]!).source, 'postgres');
    // The same conversations in the same order, byte for byte; usage in the database's order.
    const convs = (ls: string[]) => body(ls).filter((l) => l.startsWith('{"type":"conversation"'));
    const usage = (ls: string[]) =>
      body(ls)
        .filter((l) => l.startsWith('{"type":"usage"'))
        .sort();
    assert.deepEqual(convs(second), convs(first));
    assert.deepEqual(usage(second), usage(first));
    assert.equal(second.at(-1), first.at(-1));

    const b = await tempDir();
    await withPort({ dataDir: path.join(b, 'data') }, (p) => p.import(fromLines(second)));
    const third = await withPort({ dataDir: path.join(b, 'data') }, exportOf);
    assert.deepEqual(convs(third), convs(first));
    assert.deepEqual(usage(third), usage(first));

    // What each store then serves is the same: lists in creation order (the four of one second in
    // the order they were created), histories, counters (D-24), a user's list.
    const apps = ['app_demo', 'app_other'];
    const original = await servedBy(new FileStore({ dataDir: a }), apps);
    assert.deepEqual(await servedBy(new PgStore({ url }), apps), original);
    assert.deepEqual(await servedBy(new FileStore({ dataDir: path.join(b, 'data') }), apps), original);
    const demo = (original as Record<string, { list: ConversationRecord[] }>).app_demo!.list;
    assert.deepEqual(
      demo.map((r) => r.id),
      ['conv_aaa4', 'conv_aaa2', 'conv_aaa3', 'conv_aaa1', 'conv_gone'],
    );
    assert.equal(demo.find((r) => r.id === 'conv_gone')!.deleted_at, SECOND + 7);

    // Usage totals read by the ledger itself are the same.
    const ledger = await FileUsageLedger.open(path.join(b, 'data'));
    assert.deepEqual(await ledger.of('app_demo'), { requests: 2, input_tokens: 10, output_tokens: 14, total_tokens: 24, credits: 0.024 });
    assert.equal((await ledger.of('app_other')).requests, 1);
    await ledger.close();
  });
});

/** A file with one new conversation, then `clash` (a line of `lines`), and a correct end line. */
function clashing(lines: string[], clash: string): string[] {
  // Before the clash in creation order (seq 1), so that only the clash is wrong with the file.
  const fresh = lines
    .find((l) => l.includes('"id":"conv_aaa1"'))!
    .replaceAll('conv_aaa1', 'conv_new1')
    .replace(/"seq":\d+/, '"seq":1');
  const c = JSON.parse(clash) as { type: string };
  const end = {
    type: 'end',
    conversations: 1 + (c.type === 'conversation' ? 1 : 0),
    items: 0,
    responses: 0,
    usage: c.type === 'usage' ? 1 : 0,
    control: 0,
    audit: 0,
  };
  if (c.type === 'conversation') {
    const v = JSON.parse(clash) as { items: unknown[]; responses: unknown[] };
    end.items = v.items.length;
    end.responses = v.responses.length;
  }
  return [lines[0]!, fresh, clash, JSON.stringify(end)];
}

describe('an import that cannot be done changes nothing', () => {
  test('a conversation or a usage entry the store already has: the error names the id and its line, on both stores', async () => {
    const a = await tempDir();
    await seed(a);
    const lines = await withPort({ dataDir: a }, exportOf);
    const url = await freshDatabase();
    await withPort({ databaseUrl: url }, (p) => p.import(fromLines(lines)));
    const b = await tempDir();
    await withPort({ dataDir: b }, (p) => p.import(fromLines(lines)));
    const journal = await fs.readFile(path.join(b, 'conversations.jsonl'));
    const ledger = await fs.readFile(path.join(b, 'usage.jsonl'));

    const conversationClash = clashing(lines, lines.find((l) => l.includes('"id":"conv_aaa2"'))!);
    const usageClash = clashing(lines, lines.find((l) => l.includes('"id":"cmpl_1"'))!);
    for (const where of [{ databaseUrl: url }, { dataDir: b }]) {
      await assert.rejects(
        withPort(where, (p) => p.import(fromLines(conversationClash))),
        (err: Error) => err instanceof ImportError && err.line === 3 && /conversation conv_aaa2 already exists/.test(err.message),
      );
      await assert.rejects(
        withPort(where, (p) => p.import(fromLines(usageClash))),
        (err: Error) => err instanceof ImportError && err.line === 3 && /usage of completion cmpl_1 already exists/.test(err.message),
      );
    }
    // Neither store holds conv_new1, the line before the clash.
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      assert.equal((await sql`SELECT id FROM conversations WHERE id = 'conv_new1'`).length, 0);
      assert.equal((await sql`SELECT count(*)::int AS n FROM usage_entries`)[0]!.n, 3);
    } finally {
      await sql.end();
    }
    assert.deepEqual(await fs.readFile(path.join(b, 'conversations.jsonl')), journal);
    assert.deepEqual(await fs.readFile(path.join(b, 'usage.jsonl')), ledger);
    assert.equal(await fs.stat(path.join(b, 'conversations', 'w1', 'conv_new1.jsonl')).catch(() => undefined), undefined);
  });

  test('an unknown format version, a file cut short, a bad line: refused with the line, nothing imported', async () => {
    const a = await tempDir();
    await seed(a);
    const lines = await withPort({ dataDir: a }, exportOf);
    const url = await freshDatabase();
    const b = await tempDir();
    const newer = [JSON.stringify({ ...JSON.parse(lines[0]!), version: 3 }), ...lines.slice(1)];
    const cut = lines.slice(0, -1);
    const badItem = lines.map((l) => l.replace('"role":"user"', '"role":42'));
    const seqBackwards = [lines[0]!, lines[2]!, lines[1]!, ...lines.slice(3)];
    const cases: Array<[string[], RegExp]> = [
      [newer, /^line 1: format version 3 is not supported: this Parley reads versions 1 and 2; import it with the Parley that wrote it/],
      [['{"hello":1}'], /^line 1: not a Parley export/],
      [cut, /the file ends without its end line: it was cut short/],
      [badItem, /^line 2: items\.0/],
      [seqBackwards, /^line 3: record\.seq: 1 of conv_aaa4 is not after 2/],
      [[...lines.slice(0, -1), lines[1]!, lines.at(-1)!], /conversation conv_aaa4 appears twice in the file/],
      [[...lines, lines[1]!], /comes after the end line/],
    ];
    for (const where of [{ databaseUrl: url }, { dataDir: b }]) {
      for (const [file, message] of cases) {
        await assert.rejects(
          withPort(where, (p) => p.import(fromLines(file))),
          (err: Error) => err instanceof ImportError && message.test(err.message),
        );
      }
      // Nothing was written by any of them: the whole file still imports.
      assert.deepEqual(await withPort(where, (p) => p.import(fromLines(lines))), {
        conversations: 7,
        items: 9,
        responses: 5,
        usage: 3,
        control: 0,
        audit: 0,
      });
    }
  });

  test('a data directory a running Parley serves is refused, naming its process', async () => {
    const dir = await tempDir();
    // The test runner (our parent) is a running process that is not this one: its LOCK holds.
    const stat = procStat(process.ppid);
    if (!stat) return;
    const boot = (await fs.readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim();
    await fs.writeFile(path.join(dir, 'LOCK'), JSON.stringify({ pid: process.ppid, start: stat.start, boot }));
    await assert.rejects(FilePort.open(dir), (err: Error) => err instanceof DirLockedError && err.pid === process.ppid);
  });
});

describe('an import into a store with data', () => {
  test('comes after the conversations already there, in its own order, on both stores; the sequence moves past it', async () => {
    const a = await tempDir();
    await seed(a);
    const lines = await withPort({ dataDir: a }, exportOf);
    const url = await freshDatabase();
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    const b = await tempDir();
    try {
      for (const store of [new PgStore({ url }), new FileStore({ dataDir: b })]) {
        await store.open();
        await store.putConversation(await record(store, 'conv_before1', { created_at: SECOND + 100 }));
        await store.putConversation(await record(store, 'conv_before2', { created_at: SECOND + 100 }));
        await store.close();
      }
      // The sequence migration 4 adds (when it exists, imports move it past their last seq).
      await sql`CREATE SEQUENCE IF NOT EXISTS conversation_seq`;
      await sql`SELECT setval('conversation_seq', 2)`;
      for (const where of [{ databaseUrl: url }, { dataDir: b }]) await withPort(where, (p) => p.import(fromLines(lines)));
      const expected = ['conv_before1', 'conv_before2', 'conv_aaa4', 'conv_aaa2', 'conv_aaa3', 'conv_aaa1', 'conv_gone'];
      for (const store of [new PgStore({ url }), new FileStore({ dataDir: b })]) {
        await store.open();
        try {
          const list = [...(await walk(store, 'app_demo')), (await store.getConversation('conv_gone'))!];
          assert.deepEqual(
            list.map((r) => r.id),
            expected,
          );
          for (let i = 1; i < list.length; i++) assert.ok(list[i]!.seq > list[i - 1]!.seq);
          // The next conversation created comes after all of them.
          assert.ok((await store.nextSeq()) > Math.max(...list.map((r) => r.seq)));
        } finally {
          await store.close();
        }
      }
      const [{ next }] = await sql<[{ next: string }]>`SELECT nextval('conversation_seq') AS next`;
      const [{ max }] = await sql<[{ max: string }]>`SELECT max(seq) AS max FROM conversations`;
      assert.ok(Number(next) > Number(max));
    } finally {
      await sql.end();
    }
  });
});

test('the PostgreSQL export reads pages and chunks of histories (more rows than one page)', async () => {
  const url = await freshDatabase();
  const n = 1_203;
  const lines = [JSON.stringify({ format: 'parley-export', version: 1 })];
  for (let i = 1; i <= n; i++) {
    const id = `conv_p${String(i).padStart(5, '0')}`;
    const items = i % 3 === 0 ? [message(`msg_${i}`, 'user', 'x'.repeat(100), SECOND, `resp_${i}`)] : [];
    const responses = items.length ? [{ id: `resp_${i}`, created_at: SECOND, status: 'completed' }] : [];
    lines.push(
      JSON.stringify({
        type: 'conversation',
        record: {
          id,
          app_id: i % 2 ? 'app_a' : 'app_b',
          seq: i,
          created_at: SECOND,
          external_user_id: null,
          title: null,
          generated_title: {},
          metadata: {},
          deleted_at: null,
          message_count: items.length,
        },
        items,
        responses,
      }),
    );
  }
  const usage = 5_100;
  for (let i = 1; i <= usage; i++)
    lines.push(
      JSON.stringify({
        type: 'usage',
        usage: { app_id: 'app_a', kind: 'completion', id: `cmpl_${i}`, at: SECOND, input_tokens: 1, output_tokens: 1 },
      }),
    );
  lines.push(JSON.stringify({ type: 'end', conversations: n, items: 401, responses: 401, usage }));
  await withPort({ databaseUrl: url }, (p) => p.import(fromLines(lines)));
  const out = await withPort({ databaseUrl: url }, exportOf);
  assert.deepEqual(JSON.parse(out.at(-1)!), { type: 'end', conversations: n, items: 401, responses: 401, usage, control: 0, audit: 0 });
  const ids = out
    .filter((l) => l.startsWith('{"type":"conversation"'))
    .map((l) => (JSON.parse(l) as { record: ConversationRecord }).record);
  // Grouped by app, each app in creation order.
  assert.deepEqual(
    ids.map((r) => r.id),
    [...ids].sort((x, y) => x.app_id.localeCompare(y.app_id) || x.seq - y.seq).map((r) => r.id),
  );
  assert.equal(new Set(ids.map((r) => r.id)).size, n);
});

test('an export of a database without the schema, or with migrations pending, says what to run', async () => {
  const url = await freshDatabase();
  await assert.rejects(withPort({ databaseUrl: url }, exportOf), /no Parley schema/);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;
    await sql`INSERT INTO schema_migrations (version, name) VALUES (1, 'conversations')`;
  } finally {
    await sql.end();
  }
  const pending = MIGRATIONS.filter((m) => m.version > 1)
    .map((m) => `#${m.version}`)
    .join(', ');
  await assert.rejects(withPort({ databaseUrl: url }, exportOf), (err: Error) =>
    err.message.includes(`pending: ${pending}): run parley db migrate`),
  );
});

test("the file store's usage ledger: a last line a crash cut short is skipped (never acknowledged); a bad line elsewhere is an error naming it", async () => {
  const dir = await tempDir();
  const ok = JSON.stringify({
    t: 'usage',
    app_id: 'app_demo',
    kind: 'completion',
    id: 'cmpl_1',
    at: SECOND,
    input_tokens: 1,
    output_tokens: 1,
  });
  await fs.writeFile(path.join(dir, 'usage.jsonl'), `${ok}\n{"t":"usage","app_id":"app_de`);
  const lines = await withPort({ dataDir: dir }, exportOf);
  assert.deepEqual(JSON.parse(lines.at(-1)!), { type: 'end', conversations: 0, items: 0, responses: 0, usage: 1, control: 0, audit: 0 });
  await fs.writeFile(path.join(dir, 'usage.jsonl'), `${ok}\n{"t":"usage"}\n${ok}\n`);
  await assert.rejects(withPort({ dataDir: dir }, exportOf), /usage\.jsonl: line 2: app_id: /);
  await fs.writeFile(path.join(dir, 'usage.jsonl'), `${ok}\nnot json\n`);
  await assert.rejects(withPort({ dataDir: dir }, exportOf), /usage\.jsonl: line 2 is not valid JSON/);
});
