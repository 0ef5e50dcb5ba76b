// Start-up recovers what can be recovered and refuses only for a real reason (docs/storage.md,
// docs/reliability.md, D-25): the LOCK of a dead holder (a zombie, a recycled pid) is taken
// over, a live one refuses; a corrupt conversation file affects only its conversation; a journal
// that lost lines is refused with the way out; temporary files left by a crash are removed.
import assert from 'node:assert/strict';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { currentHolder, procStat } from '../src/store/file/dir-lock.ts';
import { FileStore } from '../src/store/file/file-store.ts';
import { DataFileError } from '../src/core/errors.ts';
import { FIXTURES_DIR, startTestServer, tempDir } from './support/helpers.ts';
import { exchange, record } from './support/records.ts';

const _ROOT = path.resolve(import.meta.dirname, '..');
const LINUX = fsSync.existsSync('/proc/self/stat');
const journalOf = (dir: string) => path.join(dir, 'conversations.jsonl');
const fileOf = (dir: string, id: string) => path.join(dir, 'conversations', id.slice(-2), `${id}.jsonl`);

async function open(dataDir: string, warnings: string[] = []): Promise<FileStore> {
  // Compaction as soon as the journal outgrows twice its live records (the default adds 4 MiB, D-28).
  const store = new FileStore({ dataDir, warn: (m) => void warnings.push(m), compaction: { slackBytes: 0 } });
  await store.open();
  return store;
}

async function refused(dataDir: string): Promise<DataFileError> {
  const store = new FileStore({ dataDir, warn: () => {} });
  const err = await store.open().then(
    async () => {
      await store.close();
      assert.fail('start-up should have been refused');
    },
    (e: unknown) => e,
  );
  assert.ok(err instanceof DataFileError, String(err));
  await assert.rejects(fs.access(path.join(dataDir, 'LOCK')), 'a refused start leaves no LOCK');
  return err;
}

describe('the LOCK names a running process, not just a pid (D-25)', () => {
  test('a LOCK whose pid now belongs to another process (another start time or boot) is taken over; the recording process is not', async (t) => {
    if (!LINUX) return t.skip('start times come from /proc');
    const dir = await tempDir();
    const lock = path.join(dir, 'LOCK');
    // The test runner is a live process that never held the LOCK: its pid, recycled.
    const parent = procStat(process.ppid)!;
    const boot = currentHolder().boot!;
    for (const recorded of [
      { pid: process.ppid, start: String(Number(parent.start) + 1), boot },
      { pid: process.ppid, start: parent.start, boot: '00000000-0000-0000-0000-000000000000' },
    ]) {
      await fs.writeFile(lock, JSON.stringify(recorded));
      const store = await open(dir);
      assert.deepEqual(JSON.parse(await fs.readFile(lock, 'utf8')), currentHolder());
      await store.close();
    }
    // The very process that wrote it, still running: refused.
    await fs.writeFile(lock, JSON.stringify({ pid: process.ppid, start: parent.start, boot }));
    assert.match((await refusedKeepingLock(dir)).message, new RegExp(`in use by another Parley process \\(pid ${process.ppid}\\)`));
    // A LOCK of an older Parley (a bare pid) of a live process is still refused; of a zombie or a gone process, taken over.
    await fs.writeFile(lock, String(process.ppid));
    await refusedKeepingLock(dir);
  });

  test('a clean close removes only its own LOCK', async () => {
    const dir = await tempDir();
    const store = await open(dir);
    // Taken over meanwhile (by hand, or a process that judged it stale): not ours to remove.
    await fs.writeFile(path.join(dir, 'LOCK'), 'someone else');
    await store.close();
    assert.equal(await fs.readFile(path.join(dir, 'LOCK'), 'utf8'), 'someone else');
  });
});

/** A refusal because of the LOCK leaves that LOCK as it was. */
async function refusedKeepingLock(dir: string): Promise<DataFileError> {
  const before = await fs.readFile(path.join(dir, 'LOCK'), 'utf8');
  const store = new FileStore({ dataDir: dir, warn: () => {} });
  const err = await store.open().then(
    () => assert.fail('start-up should have been refused'),
    (e: unknown) => e as DataFileError,
  );
  assert.ok(err instanceof DataFileError);
  assert.equal(await fs.readFile(path.join(dir, 'LOCK'), 'utf8'), before);
  return err;
}

describe('a corrupt conversation file affects only its conversation (D-25)', () => {
  test('even when its last exchange is unfinished in the journal: start-up goes on, the exchange stays unsettled until the file can be read, also across a compaction', async () => {
    const dir = await tempDir();
    let store = await open(dir);
    await store.putConversation(record('conv_aa01'));
    await store.putConversation(record('conv_bb02', { seq: 2 }));
    await store.appendToConversation({ ...record('conv_bb02', { seq: 2 }), message_count: 2 }, exchange('resp_0'), {
      id: 'resp_0',
      created_at: 1,
      status: 'completed',
    });
    // Enough renames of conv_bb02 that the next start-up compacts the journal.
    for (let i = 0; i < 1_100; i++) await store.putConversation(record('conv_bb02', { seq: 2, message_count: 2, title: `t${i}` }));
    await store.close();
    // A crash after conv_aa01's intent, and its file is damaged.
    await fs.appendFile(
      journalOf(dir),
      `${JSON.stringify({ t: 'intent', v: record('conv_aa01', { message_count: 2, title: 'during' }), p: 'resp_1' })}\n`,
    );
    await fs.mkdir(path.dirname(fileOf(dir, 'conv_aa01')), { recursive: true });
    // A whole line that is not JSON (a torn last line would be a crash's, and simply dropped).
    await fs.writeFile(fileOf(dir, 'conv_aa01'), '{"items": [\n');
    const warnings: string[] = [];
    store = await open(dir, warnings);
    try {
      assert.ok(
        warnings.some(
          (w) => w.includes(`${fileOf(dir, 'conv_aa01')}: line 1 is not valid JSON`) && w.includes('resp_1') && w.includes('unsettled'),
        ),
        `the log names the file and the exchange left unsettled: ${warnings.join(' | ')}`,
      );
      assert.deepEqual(
        [(await store.getConversation('conv_aa01'))!.message_count, (await store.getConversation('conv_aa01'))!.title],
        [0, null],
        'the record as it was before the exchange',
      );
      await assert.rejects(store.readHistory('conv_aa01'), DataFileError);
      assert.equal((await store.readHistory('conv_bb02')).items.length, 2, 'every other conversation is served');
      assert.equal((await store.getConversation('conv_bb02'))!.title, 't1099');
    } finally {
      await store.close();
    }
    const compacted = (await fs.readFile(journalOf(dir), 'utf8')).trimEnd().split('\n');
    assert.ok(compacted.length < 10, `the journal was compacted (${compacted.length} lines)`);
    assert.ok(
      compacted.some((l) => JSON.parse(l).t === 'intent'),
      'the unsettled intent survived the compaction',
    );

    // The file is restored, with the exchange in it: the next start-up settles it.
    await fs.writeFile(
      fileOf(dir, 'conv_aa01'),
      `${JSON.stringify({ items: exchange('resp_1'), responses: [{ id: 'resp_1', created_at: 1, status: 'completed' }] })}\n`,
    );
    store = await open(dir);
    try {
      assert.deepEqual(
        [(await store.getConversation('conv_aa01'))!.message_count, (await store.getConversation('conv_aa01'))!.title],
        [2, 'during'],
      );
      assert.equal((await store.appCounters('app_demo')).messages, 4);
    } finally {
      await store.close();
    }
  });
});

describe('a journal that lost lines is refused, with the way out (D-25)', () => {
  async function seeded(): Promise<{ dir: string; lines: string[] }> {
    const dir = await tempDir();
    const store = await open(dir);
    await store.putConversation(record('conv_aa01'));
    await store.appendToConversation({ ...record('conv_aa01'), message_count: 2 }, exchange('resp_1'), {
      id: 'resp_1',
      created_at: 1,
      status: 'completed',
    });
    await store.putConversation(record('conv_bb02', { seq: 2 }));
    await store.close();
    return { dir, lines: (await fs.readFile(journalOf(dir), 'utf8')).trimEnd().split('\n') };
  }

  test('an empty or missing journal beside conversation files', async () => {
    const { dir } = await seeded();
    await fs.writeFile(journalOf(dir), '');
    const err = await refused(dir);
    assert.equal(err.file, journalOf(dir));
    assert.match(
      err.message,
      /conversations\.jsonl: has no record of 1 conversation file \(conversations\/01\/conv_aa01\.jsonl\): it has lost lines/,
    );
    assert.match(err.message, /Restore it from a backup; or, to start without that conversation, move its file out of /);
    assert.equal(await fs.readFile(journalOf(dir), 'utf8'), '', 'nothing rewritten');
    await fs.rm(journalOf(dir));
    await refused(dir);
  });

  test('a journal cut short by hand; moving the files named out is the way to start without them', async () => {
    const { dir, lines } = await seeded();
    // The lines of conv_aa01 (its create and its exchange) are gone; conv_bb02's is left.
    await fs.writeFile(journalOf(dir), `${lines.at(-1)}\n`);
    const err = await refused(dir);
    assert.match(err.message, /no record of 1 conversation file \(conversations\/01\/conv_aa01\.jsonl\)/);
    await fs.rename(fileOf(dir, 'conv_aa01'), path.join(dir, '..', `${path.basename(dir)}-conv_aa01.jsonl`));
    const store = await open(dir);
    try {
      assert.equal(await store.getConversation('conv_aa01'), undefined);
      assert.ok(await store.getConversation('conv_bb02'));
    } finally {
      await store.close();
    }
  });
});

test('temporary files left by a crash are removed at start-up; the files they were to replace are untouched', async () => {
  const dir = await tempDir();
  let store = await open(dir);
  await store.putConversation(record('conv_aa01'));
  await store.appendToConversation({ ...record('conv_aa01'), message_count: 2 }, exchange('resp_1'), {
    id: 'resp_1',
    created_at: 1,
    status: 'completed',
  });
  await store.close();
  const leftovers = [
    `${fileOf(dir, 'conv_aa01')}.tmp`,
    `${fileOf(dir, 'conv_zz99')}.tmp`,
    `${journalOf(dir)}.tmp`,
    path.join(dir, 'ratelimits.jsonl.tmp'),
  ];
  await fs.mkdir(path.dirname(leftovers[1]!), { recursive: true });
  for (const f of leftovers) await fs.writeFile(f, '{"torn');
  const before = await fs.readFile(fileOf(dir, 'conv_aa01'), 'utf8');
  store = await open(dir);
  try {
    for (const f of leftovers) await assert.rejects(fs.access(f), `${f} removed`);
    assert.equal(await fs.readFile(fileOf(dir, 'conv_aa01'), 'utf8'), before);
    assert.equal((await store.readHistory('conv_aa01')).items.length, 2);
  } finally {
    await store.close();
  }
});

describe("the fixtures' conversations (D-107)", () => {
  const SEED = 'conv_5eed00000000000000000001';

  test('a start makes each one the store lacks, once, in its app: a disabled app has a conversation, which answers 403 app_inactive', async () => {
    const first = await startTestServer();
    const made = await first.store.getConversation(SEED);
    assert.deepEqual(
      [made?.app_id, made?.title, made?.deleted_at, made?.message_count],
      ['app_inactive', 'A conversation of the disabled app (fixtures, D-107)', null, 0],
    );
    const answer = await first.call('POST', `/apps/app_inactive/conversations/${SEED}`, { message: { content: 'Hello' } });
    assert.deepEqual([answer.status, answer.body.error?.type], [403, 'app_inactive']);
    await first.close();
    // Found at the next start: not made again (a second record would be a second line of the journal).
    const again = await startTestServer({ dataDir: first.dataDir });
    try {
      assert.equal((await again.store.getConversation(SEED))?.seq, made?.seq);
      if (again.store instanceof FileStore) {
        const lines = (await fs.readFile(journalOf(first.dataDir), 'utf8')).trimEnd().split('\n');
        assert.equal(lines.filter((l) => l.includes(SEED)).length, 1);
      }
    } finally {
      await again.close();
    }
  });

  test('a conversation of an app the fixtures do not have is a data file error naming it', async () => {
    const dir = await tempDir();
    const fixtures = JSON.parse(await fs.readFile(path.join(FIXTURES_DIR, 'fixtures.json'), 'utf8'));
    fixtures.conversations = [{ id: 'conv_seeded', app_id: 'app_gone' }];
    await fs.writeFile(path.join(dir, 'fixtures.json'), JSON.stringify(fixtures));
    await assert.rejects(startTestServer({ fixturesDir: dir }), /fixtures\.json: conversation conv_seeded: unknown app app_gone/);
  });
});
