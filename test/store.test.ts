// The store (docs/storage.md): restarts keep everything, concurrent writes, crash leftovers,
// corrupt files named clearly, the LOCK, and journal compaction.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import pino from 'pino';
import { ReferenceConversationList, type ItemT } from '../src/contract/index.ts';
import { FileStore } from '../src/store/file/file-store.ts';
import { HistoryCache } from '../src/store/file/history-cache.ts';
import { DataFileError } from '../src/core/errors.ts';
import { APP, fixturesWithoutSeeds, startTestServer as startWithSeeds, tempDir, type TestServer } from './support/helpers.ts';
import { startParley } from '../src/app.ts';

const conv = `/apps/${APP}/conversations`;
// These tests read the journal's lines: the fixtures' seeded conversation (D-107) would add one.
const FIXTURES = await fixturesWithoutSeeds();
const startTestServer = (opts: Parameters<typeof startWithSeeds>[0] = {}) => startWithSeeds({ fixturesDir: FIXTURES, ...opts });
const journalOf = (dir: string) => path.join(dir, 'conversations.jsonl');
const fileOf = (dir: string, id: string) => path.join(dir, 'conversations', id.slice(-2), `${id}.json`);

async function listAll(server: TestServer): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (;;) {
    const r = await server.call('GET', `${conv}?limit=100&order=asc${cursor ? `&after=${cursor}` : ''}`);
    const page = ReferenceConversationList.parse(r.body);
    ids.push(...page.data.map((c) => c.id));
    if (!page.has_more) return ids;
    cursor = page.last_id;
  }
}

async function startExpectingError(dataDir: string): Promise<DataFileError> {
  const err = await startParley({ host: '127.0.0.1', port: 0, dataDir, fixturesDir: FIXTURES, logger: pino({ level: 'silent' }) }).then(
    async (p) => {
      await p.close();
      assert.fail('start-up should have failed');
    },
    (e: unknown) => e,
  );
  assert.ok(err instanceof DataFileError, String(err));
  return err;
}

function userMessage(id: string, text: string): ItemT {
  return { id, type: 'message', created_at: Math.floor(Date.now() / 1000), role: 'user', content: [{ type: 'text', text }] };
}

describe('restart', () => {
  test('close and start again on the same data dir keeps every conversation, field, item and counter', async () => {
    const first = await startTestServer();
    const a = (await first.call('POST', conv, { title: 'A', external_user_id: 'alice', metadata: { tier: 'gold', n: [1, 2] } })).body;
    const b = (await first.call('POST', conv)).body;
    const c = (await first.call('POST', conv, { external_user_id: 'bob' })).body;
    await first.call('PATCH', `${conv}/${b.id}`, { title: 'Renamed' });
    await first.call('DELETE', `${conv}/${c.id}`);
    await first.store.appendToConversation({ ...(await first.store.getConversation(a.id))!, message_count: 1 }, [
      userMessage('msg_1', 'hello'),
    ]);
    const before = {
      list: (await first.call('GET', `${conv}?order=asc`)).body,
      a: (await first.call('GET', `${conv}/${a.id}`)).body,
      metrics: (await first.call('GET', `/apps/${APP}/metrics`)).body,
    };
    await first.close();
    // The LOCK goes with a clean close.
    await assert.rejects(fs.access(path.join(first.dataDir, 'LOCK')));

    const second = await startTestServer({ dataDir: first.dataDir });
    try {
      assert.deepEqual((await second.call('GET', `${conv}?order=asc`)).body, before.list);
      assert.deepEqual((await second.call('GET', `${conv}/${a.id}`)).body, before.a);
      assert.deepEqual((await second.call('GET', `/apps/${APP}/metrics`)).body, before.metrics);
      assert.deepEqual(before.metrics, { total_conversations: 3, total_messages: 1, total_users: 2 });
      assert.equal((await second.call('GET', `${conv}/${c.id}`)).status, 404, 'still deleted');
      // The creation sequence continues after the restart (D-7): a new one sorts last.
      const d = (await second.call('POST', conv)).body;
      assert.deepEqual(await listAll(second), [a.id, b.id, d.id]);
    } finally {
      await second.close();
    }
  });

  test('200 concurrent creates give 200 distinct conversations, also after a restart', async () => {
    const server = await startTestServer();
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => server.call('POST', conv, { title: `c${i}` })));
    assert.ok(answers.every((r) => r.status === 200));
    const ids = answers.map((r) => r.body.id as string);
    assert.equal(new Set(ids).size, 200);
    const listed = await listAll(server);
    assert.deepEqual([...listed].sort(), [...ids].sort());
    await server.close();

    const again = await startTestServer({ dataDir: server.dataDir });
    try {
      assert.deepEqual(await listAll(again), listed, 'same conversations in the same order');
      const journal = (await fs.readFile(journalOf(server.dataDir), 'utf8')).trimEnd().split('\n');
      assert.equal(journal.length, 200, 'one journal line each');
    } finally {
      await again.close();
    }
  });

  test('concurrent rename and delete of one conversation never bring it back', async () => {
    const server = await startTestServer();
    try {
      const { body: c } = await server.call('POST', conv);
      const [renamed, deleted] = await Promise.all([
        server.call('PATCH', `${conv}/${c.id}`, { title: 'x' }),
        server.call('DELETE', `${conv}/${c.id}`),
      ]);
      // The rename lands before the delete (200) or after it (404); either way the delete holds.
      assert.ok([200, 404].includes(renamed.status));
      assert.equal(deleted.status, 200);
      assert.equal((await server.call('GET', `${conv}/${c.id}`)).status, 404);
    } finally {
      await server.close();
    }
  });
});

describe('crash leftovers and corrupt files', () => {
  async function seed(): Promise<{ dir: string; ids: string[] }> {
    const server = await startTestServer();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await server.call('POST', conv, { title: `t${i}` })).body.id);
    await server.close();
    return { dir: server.dataDir, ids };
  }

  test('a torn last journal line is dropped with a warning naming the file and bytes; the rest survives and later writes are whole', async () => {
    const { dir, ids } = await seed();
    const torn = '{"t":"conv","v":{"id":"conv_torn","app_';
    await fs.appendFile(journalOf(dir), torn);
    const logged: string[] = [];
    const server = await startTestServer({ dataDir: dir, logger: pino({ level: 'warn' }, { write: (l: string) => void logged.push(l) }) });
    try {
      assert.ok(
        logged.some((l) => JSON.parse(l).msg.startsWith(`${journalOf(dir)}: dropped the last ${torn.length} bytes`)),
        logged.join(''),
      );
      assert.deepEqual(await listAll(server), ids);
      ids.push((await server.call('POST', conv)).body.id);
    } finally {
      await server.close();
    }
    const lines = (await fs.readFile(journalOf(dir), 'utf8')).split('\n');
    assert.equal(lines.pop(), '', 'ends with a newline');
    for (const l of lines) JSON.parse(l);
    const again = await startTestServer({ dataDir: dir });
    try {
      assert.deepEqual(await listAll(again), ids);
    } finally {
      await again.close();
    }
  });

  test('a hand-edited journal whose last newline was removed loses nothing: the last line is kept', async () => {
    const { dir, ids } = await seed();
    const first = await startTestServer({ dataDir: dir });
    await first.call('PATCH', `${conv}/${ids[2]}`, { title: 'renamed' });
    await first.close();
    const text = await fs.readFile(journalOf(dir), 'utf8');
    await fs.writeFile(journalOf(dir), text.slice(0, -1));
    const server = await startTestServer({ dataDir: dir });
    try {
      assert.equal((await server.call('GET', `${conv}/${ids[2]}`)).body.title, 'renamed');
    } finally {
      await server.close();
    }
    assert.equal(await fs.readFile(journalOf(dir), 'utf8'), text, 'only the newline was added back');
  });

  test('a corrupt journal line stops start-up with an error naming the file and the line', async () => {
    const { dir } = await seed();
    const lines = (await fs.readFile(journalOf(dir), 'utf8')).split('\n');
    lines[1] = '{"t":"conv","v":{oops}}';
    await fs.writeFile(journalOf(dir), lines.join('\n'));
    const err = await startExpectingError(dir);
    assert.equal(err.file, journalOf(dir));
    assert.match(err.message, /conversations\.jsonl: line 2 is not valid JSON/);
    await assert.rejects(fs.access(path.join(dir, 'LOCK')), 'a refused start leaves no LOCK');
    // Nothing was rewritten or lost: the file is as it was left.
    assert.equal(await fs.readFile(journalOf(dir), 'utf8'), lines.join('\n'));
  });

  test('a hand-edited journal line with a wrong field names the line and the field', async () => {
    const { dir } = await seed();
    const lines = (await fs.readFile(journalOf(dir), 'utf8')).split('\n');
    const entry = JSON.parse(lines[2]!);
    entry.v.created_at = 'yesterday';
    lines[2] = JSON.stringify(entry);
    await fs.writeFile(journalOf(dir), lines.join('\n'));
    const err = await startExpectingError(dir);
    assert.match(err.message, /conversations\.jsonl: line 3: v\.created_at: /);
    entry.v = { ...entry.v, created_at: 1, id: '../../../etc/passwd' };
    lines[2] = JSON.stringify(entry);
    await fs.writeFile(journalOf(dir), lines.join('\n'));
    assert.match((await startExpectingError(dir)).message, /line 3: v\.id: must be letters, digits/);
  });

  test('hand-edited lines that break the rules between lines: a duplicate seq, or an id whose app, seq or creation time changes', async () => {
    const { dir } = await seed();
    const text = await fs.readFile(journalOf(dir), 'utf8');
    const [a, b] = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l).v);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      // A new id with the seq of another conversation: one of them would vanish from the list.
      [{ ...a, id: 'conv_newid', title: 'dup' }, /line 4: v\.seq: 1 is already the seq of conv_/],
      [{ ...b, app_id: 'app_genui' }, /line 4: v\.app_id: "app_genui" differs from "app_demo" in an earlier line of conv_/],
      [{ ...b, seq: 99 }, /line 4: v\.seq: 99 differs from 2 /],
      [{ ...b, created_at: b.created_at + 1 }, /line 4: v\.created_at: \d+ differs from \d+ /],
    ];
    for (const [v, fault] of cases) {
      const edited = `${text + JSON.stringify({ t: 'conv', v })}\n`;
      await fs.writeFile(journalOf(dir), edited);
      const err = await startExpectingError(dir);
      assert.equal(err.file, journalOf(dir));
      assert.match(err.message, fault);
      assert.equal(await fs.readFile(journalOf(dir), 'utf8'), edited, 'nothing rewritten');
    }
    // The same rules hold for an exchange's intent line.
    await fs.writeFile(journalOf(dir), `${text + JSON.stringify({ t: 'intent', v: { ...b, app_id: 'app_genui' }, p: 'resp_x' })}\n`);
    assert.match((await startExpectingError(dir)).message, /line 4: v\.app_id: /);
    // A later version of the same conversation with its seq, app and creation time is fine.
    await fs.writeFile(journalOf(dir), `${text + JSON.stringify({ t: 'conv', v: { ...b, title: 'ok' } })}\n`);
    const server = await startTestServer({ dataDir: dir });
    try {
      assert.equal((await server.call('GET', `${conv}/${b.id}`)).body.title, 'ok');
    } finally {
      await server.close();
    }
  });

  test('a corrupt conversation file: a clear error naming the file, 500 to its reads, nothing else affected or overwritten', async () => {
    const first = await startTestServer();
    const a = (await first.call('POST', conv)).body;
    const b = (await first.call('POST', conv)).body;
    for (const c of [a, b]) {
      await first.store.appendToConversation({ ...(await first.store.getConversation(c.id))!, message_count: 1 }, [
        userMessage(`msg_${c.id}`, 'hi'),
      ]);
    }
    await first.close();
    await fs.writeFile(fileOf(first.dataDir, a.id), '{"items": [');

    const lines: string[] = [];
    const server = await startTestServer({
      dataDir: first.dataDir,
      logger: pino({ level: 'info' }, { write: (l: string) => void lines.push(l) }),
    });
    try {
      const r = await server.call('GET', `${conv}/${a.id}`);
      assert.equal(r.status, 500);
      assert.equal(r.body.error.type, 'internal_error');
      assert.doesNotMatch(r.body.error.message, /json|conversations\//i, 'no internals in the answer (D-5)');
      const logged = lines.find((l) => l.includes(r.headers.get('x-request-id')!) && l.includes('unexpected error'));
      assert.ok(logged?.includes(`${fileOf(first.dataDir, a.id)}: is not valid JSON`), 'the log names the file and the fault');
      // A write to it is refused rather than replacing what is left of it.
      await assert.rejects(
        server.store.appendToConversation((await server.store.getConversation(a.id))!, [userMessage('msg_x', 'x')]),
        DataFileError,
      );
      assert.equal(await fs.readFile(fileOf(first.dataDir, a.id), 'utf8'), '{"items": [');
      // The other conversation, the list and the metrics are unaffected.
      assert.equal((await server.call('GET', `${conv}/${b.id}`)).body.items.length, 1);
      assert.deepEqual(await listAll(server), [a.id, b.id]);
    } finally {
      await server.close();
    }
  });

  test('a conversation file of the wrong shape names the file and the field', async () => {
    const first = await startTestServer();
    const { body: c } = await first.call('POST', conv);
    await first.close();
    // Placed while the store is closed: start-up's sweep is what finds an `<id>.json` (D-163).
    await fs.mkdir(path.dirname(fileOf(first.dataDir, c.id)), { recursive: true });
    await fs.writeFile(fileOf(first.dataDir, c.id), JSON.stringify({ items: 'none', responses: [] }));
    const server = await startTestServer({ dataDir: first.dataDir });
    try {
      await assert.rejects(
        server.store.readHistory(c.id),
        (e: Error) => e instanceof DataFileError && e.message.includes(`${c.id}.json: items: `),
      );
    } finally {
      await server.close();
    }
  });

  test('a temporary file left by a crash mid-write is ignored and replaced', async () => {
    const server = await startTestServer();
    try {
      const { body: c } = await server.call('POST', conv);
      const file = fileOf(server.dataDir, c.id);
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(`${file}.tmp`, '{"items": [tor');
      await server.store.appendToConversation({ ...(await server.store.getConversation(c.id))!, message_count: 1 }, [
        userMessage('msg_1', 'x'),
      ]);
      // D-29: the history is appended to its own JSON-lines file; the leftover is not read.
      assert.equal(JSON.parse(await fs.readFile(`${file}l`, 'utf8')).items.length, 1);
      assert.equal((await server.store.readHistory(c.id)).items.length, 1);
    } finally {
      await server.close();
    }
  });
});

describe('the data directory', () => {
  test('a LOCK held by a live process stops start-up; a stale one is taken over', async () => {
    const dir = await tempDir();
    await fs.writeFile(path.join(dir, 'LOCK'), String(process.ppid));
    const err = await startExpectingError(dir);
    assert.match(err.message, new RegExp(`in use by another Parley process \\(pid ${process.ppid}\\)`));

    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    await fs.writeFile(path.join(dir, 'LOCK'), gone.stdout);
    const server = await startTestServer({ dataDir: dir });
    try {
      assert.equal(JSON.parse(await fs.readFile(path.join(dir, 'LOCK'), 'utf8')).pid, process.pid);
    } finally {
      await server.close();
    }
  });

  test('a journal that cannot be read names the file', async () => {
    const dir = await tempDir();
    await fs.mkdir(journalOf(dir));
    const err = await startExpectingError(dir);
    assert.match(err.message, /conversations\.jsonl: cannot be read \(EISDIR\)/);
  });

  test('bad fixtures name the file and the fault', async () => {
    for (const [content, fault] of [
      ['{"teams": [', /fixtures\.json: is not valid JSON/],
      [JSON.stringify({ teams: [], keys: [], plans: [], apps: [{ id: 'a' }] }), /fixtures\.json: apps\.0\.team_id: /],
      [
        JSON.stringify({ teams: [], keys: [{ id: 'k', team_id: 'nope', type: 'secret', sha256: '0'.repeat(64) }], plans: [], apps: [] }),
        /key k: unknown team nope/,
      ],
    ] as const) {
      const dir = await tempDir();
      await fs.writeFile(path.join(dir, 'fixtures.json'), content);
      const err = await startParley({ port: 0, dataDir: await tempDir(), fixturesDir: dir, logger: pino({ level: 'silent' }) }).then(
        () => assert.fail('should not start'),
        (e: Error) => e,
      );
      assert.ok(err instanceof DataFileError);
      assert.match(err.message, fault);
    }
    const missing = await startParley({
      port: 0,
      dataDir: await tempDir(),
      fixturesDir: '/nonexistent',
      logger: pino({ level: 'silent' }),
    }).catch((e: Error) => e);
    assert.match(String(missing), /fixtures\.json: cannot be read \(ENOENT\)/);
  });

  test('a data dir that is a file gives a clear error', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'not-a-dir');
    await fs.writeFile(file, '');
    const err = await startExpectingError(file);
    assert.match(err.message, /not-a-dir: is not a directory/);
  });

  test('a long journal of superseded versions is compacted at start-up', async () => {
    const server = await startTestServer();
    const { body: c } = await server.call('POST', conv);
    const { body: keep } = await server.call('POST', conv, { title: 'keep' });
    await server.close();
    // 1,500 renames of one conversation, written as a long-running server would have.
    const record = JSON.parse((await fs.readFile(journalOf(server.dataDir), 'utf8')).split('\n')[0]!).v;
    // D-28: compaction follows bytes (over twice the live records plus 4 MiB): 3 KB of metadata each.
    const history = Array.from(
      { length: 1_500 },
      (_, i) => `${JSON.stringify({ t: 'conv', v: { ...record, title: `v${i}`, metadata: { pad: 'x'.repeat(3_000) } } })}\n`,
    ).join('');
    await fs.appendFile(journalOf(server.dataDir), history);

    const again = await startTestServer({ dataDir: server.dataDir });
    try {
      const lines = (await fs.readFile(journalOf(server.dataDir), 'utf8')).trimEnd().split('\n');
      assert.equal(lines.length, 2, 'one line per conversation');
      assert.equal((await again.call('GET', `${conv}/${c.id}`)).body.title, 'v1499');
      assert.deepEqual(await listAll(again), [c.id, keep.id]);
      // And it keeps appending after the compaction.
      await again.call('PATCH', `${conv}/${c.id}`, { title: 'after' });
    } finally {
      await again.close();
    }
    const third = await startTestServer({ dataDir: server.dataDir });
    try {
      assert.equal((await third.call('GET', `${conv}/${c.id}`)).body.title, 'after');
    } finally {
      await third.close();
    }
  });

  test('the file cache keeps at most 1,000 parsed files and still serves evicted ones', async () => {
    const dir = await tempDir();
    const store = new FileStore({ dataDir: dir });
    await store.open();
    try {
      for (let i = 0; i < 1_050; i++) await store.readHistory(`conv_${i.toString().padStart(4, '0')}`);
      await new Promise((r) => setImmediate(r));
      const cached = (store as unknown as { histories: { size: number; has(id: string): boolean } }).histories;
      assert.ok(cached.size <= 1_000, `cache holds ${cached.size}`);
      assert.ok(cached.has('conv_1049'), 'the most recent stays');
      assert.ok(!cached.has('conv_0000'), 'the least recent goes');
      assert.deepEqual(await store.readHistory('conv_0000'), { items: [], responses: [], bytes: 0 });
    } finally {
      await store.close();
    }
  });
});

describe('the history cache (D-29: capped by count and by bytes)', () => {
  test('a history let go (forget, drop) leaves the byte total: the others stay held, up to the cap', async () => {
    const dir = await tempDir();
    const ids = ['conv_hc_a1', 'conv_hc_b2', 'conv_hc_c3', 'conv_hc_d4', 'conv_hc_e5'];
    // Five histories of the same size on disk, the cap three of them.
    let size = 0;
    for (const id of ids) {
      const line = `${JSON.stringify({ items: [userMessage(`msg_${id.slice(-2)}`, 'y'.repeat(4000))], responses: [] })}\n`;
      const file = path.join(dir, 'conversations', id.slice(-2), `${id}.jsonl`);
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(file, line);
      size = Buffer.byteLength(line);
    }
    const cache = new HistoryCache(dir, 3 * size);
    const [a, b, c, d, e] = ids as [string, string, string, string, string];
    for (const id of [a, b, c]) assert.equal((await cache.get(id)).bytes, size);
    assert.deepEqual(
      [a, b, c].map((id) => cache.has(id)),
      [true, true, true],
      'three fit',
    );
    cache.forget(a);
    await cache.get(d);
    // Had a's bytes stayed in the total, d would have pushed it over the cap and b (the oldest) out.
    assert.deepEqual(
      [b, c, d].map((id) => cache.has(id)),
      [true, true, true],
      'after a forget',
    );
    await cache.drop(c);
    await cache.get(e);
    assert.deepEqual(
      [b, d, e].map((id) => cache.has(id)),
      [true, true, true],
      'after a drop',
    );
    // The cap still holds: a sixth read pushes the oldest out.
    await cache.get(a);
    assert.deepEqual(
      [b, d, e, a].map((id) => cache.has(id)),
      [false, true, true, true],
      'over the cap',
    );
  });
});
