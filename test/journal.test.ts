// The journal's streamed reader: the same entries, line numbers, torn-tail handling and errors
// whatever the chunk size, with lines and multi-byte characters cut across chunks.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Journal } from '../src/store/file/journal.ts';
import { DataFileError } from '../src/core/errors.ts';
import { tempDir } from './support/helpers.ts';

// Lines of 1 to ~300 bytes, with 2-, 3- and 4-byte UTF-8 characters and a blank line (line 3).
const ENTRIES = [{ n: 1, s: 'é' }, { n: 2, s: 'x'.repeat(300) }, null, { n: 3, s: '€ 漢字 😀' }, { n: 4 }];
const TEXT = `${ENTRIES.map((e) => (e === null ? '   ' : JSON.stringify(e))).join('\n')}\n`;
const WHOLE = ENTRIES.filter((e) => e !== null);
const LINE_NOS = [1, 2, 4, 5];

async function read(
  file: string,
  chunkBytes?: number,
  warnings: string[] = [],
): Promise<{ entries: unknown[]; lineNos: number[]; result: { lines: number; dropped: boolean }; journal: Journal }> {
  const journal = new Journal(file, { chunkBytes, warn: (m) => void warnings.push(m) });
  const entries: unknown[] = [];
  const lineNos: number[] = [];
  const result = await journal.open((e, line) => {
    entries.push(e);
    lineNos.push(line);
  });
  return { entries, lineNos, result, journal };
}

describe('journal reader', () => {
  test('reads the same entries and line numbers with every chunk size, lines cut across chunks', async () => {
    const file = path.join(await tempDir(), 'j.jsonl');
    await fs.writeFile(file, TEXT);
    // 1 byte cuts every multi-byte character; 7 and 64 cut lines at odd places; the default reads it whole.
    for (const chunkBytes of [1, 2, 3, 7, 64, 301, undefined]) {
      const { entries, lineNos, result, journal } = await read(file, chunkBytes);
      await journal.close();
      assert.deepEqual(entries, WHOLE, `chunk ${chunkBytes}`);
      assert.deepEqual(lineNos, LINE_NOS, `chunk ${chunkBytes}`);
      assert.deepEqual(result, { lines: 5, dropped: false });
      assert.equal(journal.lines, 4);
    }
    assert.equal(await fs.readFile(file, 'utf8'), TEXT, 'reading changes nothing');
  });

  test('a torn tail spanning chunks is dropped with a warning, cut off the file, and the next append is a whole line', async () => {
    for (const chunkBytes of [1, 5, 64, undefined]) {
      const file = path.join(await tempDir(), 'j.jsonl');
      // A torn multi-byte tail longer than a chunk.
      const torn = '{"n":5,"s":"漢字 torn';
      await fs.writeFile(file, TEXT + torn);
      const warnings: string[] = [];
      const { entries, result, journal } = await read(file, chunkBytes, warnings);
      assert.deepEqual(entries, WHOLE, `chunk ${chunkBytes}`);
      assert.deepEqual(result, { lines: 6, dropped: true });
      assert.equal(warnings.length, 1);
      assert.ok(warnings[0]!.startsWith(`${file}: dropped the last ${Buffer.byteLength(torn)} bytes (line 6`), warnings[0]);
      assert.equal(await fs.readFile(file, 'utf8'), TEXT, 'the torn tail is cut off');
      await journal.append({ n: 6 });
      await journal.close();
      assert.equal(await fs.readFile(file, 'utf8'), `${TEXT}{"n":6}\n`);
      const again = await read(file, chunkBytes);
      await again.journal.close();
      assert.deepEqual(again.entries, [...WHOLE, { n: 6 }]);
      assert.equal(again.result.dropped, false);
    }
  });

  test('a whole last line without its newline is kept, and the newline added (a hand edit, not a crash)', async () => {
    for (const chunkBytes of [1, 5, 64, undefined]) {
      const file = path.join(await tempDir(), 'j.jsonl');
      await fs.writeFile(file, `${TEXT}{"n":5,"s":"漢字"}`);
      const warnings: string[] = [];
      const { entries, lineNos, result, journal } = await read(file, chunkBytes, warnings);
      assert.deepEqual(entries, [...WHOLE, { n: 5, s: '漢字' }], `chunk ${chunkBytes}`);
      assert.deepEqual(lineNos, [...LINE_NOS, 6]);
      assert.deepEqual(result, { lines: 6, dropped: false });
      assert.deepEqual(warnings, []);
      assert.equal(await fs.readFile(file, 'utf8'), `${TEXT}{"n":5,"s":"漢字"}\n`, 'only the newline is added');
      await journal.append({ n: 6 });
      await journal.close();
      assert.equal(await fs.readFile(file, 'utf8'), `${TEXT}{"n":5,"s":"漢字"}\n{"n":6}\n`);
    }
  });

  test('a whole last line that the caller refuses stops the open and leaves the file as it was', async () => {
    const file = path.join(await tempDir(), 'j.jsonl');
    await fs.writeFile(file, `${TEXT}{"n":"five"}`);
    const journal = new Journal(file, { chunkBytes: 7 });
    await assert.rejects(
      journal.open((e, line) => {
        if (typeof (e as { n: unknown }).n !== 'number') throw new DataFileError(file, `line ${line}: n must be a number`);
      }),
      /line 6: n must be a number/,
    );
    assert.equal(await fs.readFile(file, 'utf8'), `${TEXT}{"n":"five"}`, 'nothing rewritten');
  });

  test('a bad line before the end names its line number, whatever the chunk size', async () => {
    const file = path.join(await tempDir(), 'j.jsonl');
    const bad = TEXT.split('\n');
    bad[3] = '{"n":3,"s":"漢字"'; // line 4: cut short but followed by more lines, so damage, not a torn tail
    await fs.writeFile(file, bad.join('\n'));
    for (const chunkBytes of [1, 7, undefined]) {
      const err = await read(file, chunkBytes).then(
        () => assert.fail('should not open'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof DataFileError);
      assert.equal(err.file, file);
      assert.match(err.message, /j\.jsonl: line 4 is not valid JSON/);
    }
    assert.equal(await fs.readFile(file, 'utf8'), bad.join('\n'), 'nothing rewritten');
  });

  test('skipBadLines skips bad lines across chunks and keeps reading', async () => {
    const file = path.join(await tempDir(), 'j.jsonl');
    await fs.writeFile(file, '{"n":1}\nnot json at all\n{"n":2}\n');
    const journal = new Journal(file, { skipBadLines: true, chunkBytes: 3 });
    const entries: unknown[] = [];
    assert.deepEqual(await journal.open((e) => entries.push(e)), { lines: 3, dropped: false });
    await journal.close();
    assert.deepEqual(entries, [{ n: 1 }, { n: 2 }]);
  });

  test('an error thrown by the caller for an entry stops the read and closes the file', async () => {
    const file = path.join(await tempDir(), 'j.jsonl');
    await fs.writeFile(file, TEXT);
    const journal = new Journal(file, { chunkBytes: 4 });
    await assert.rejects(
      journal.open((_e, line) => {
        if (line === 2) throw new DataFileError(file, 'line 2: refused');
      }),
      /line 2: refused/,
    );
    // Nothing left open for writing: a new journal on the same file opens normally.
    const { entries, journal: again } = await read(file);
    await again.close();
    assert.deepEqual(entries, WHOLE);
  });

  test('a missing journal is empty and is created on open', async () => {
    const file = path.join(await tempDir(), 'j.jsonl');
    const { entries, result, journal } = await read(file, 4);
    await journal.append({ n: 1 });
    await journal.close();
    assert.deepEqual(entries, []);
    assert.deepEqual(result, { lines: 0, dropped: false });
    assert.equal(await fs.readFile(file, 'utf8'), '{"n":1}\n');
  });
});

describe('appendNow: written at once, fsynced later (the rate-limit counts, the webhook outbox)', () => {
  /** Counts FileHandle.datasync calls (and can make them fail) for the duration of one test. */
  async function spyDatasync(fail = false) {
    const probe = await fs.open(path.join(await tempDir(), 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
    await probe.close();
    const original = proto.datasync;
    const spy = { calls: 0, restore: () => void (proto.datasync = original) };
    proto.datasync = function (this: unknown) {
      spy.calls++;
      return fail ? Promise.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })) : original.call(this);
    };
    return spy;
  }

  test('each line is in the file when appendNow returns; one fsync covers the lines written meanwhile, and close makes it at once', async (t) => {
    const file = path.join(await tempDir(), 'j.jsonl');
    const spy = await spyDatasync();
    t.after(spy.restore);
    // A delay no test run reaches: only close() can have made the fsync.
    const journal = new Journal(file, { syncDelayMs: 3_600_000 });
    await journal.open(() => {});
    for (let n = 1; n <= 3; n++) {
      journal.appendNow({ n });
      assert.equal((await fs.readFile(file, 'utf8')).split('\n').length - 1, n);
    }
    assert.equal(spy.calls, 0, 'no fsync on the request path');
    await journal.close();
    assert.equal(spy.calls, 1, 'one fsync for the three lines, made by close');
    assert.equal(journal.lines, 3);
  });

  test('the fsync comes by itself after syncDelayMs, and its failure is reported, not thrown', async (t) => {
    const file = path.join(await tempDir(), 'j.jsonl');
    const spy = await spyDatasync(true);
    t.after(spy.restore);
    // The journal's timer does not keep a process alive (unref): this one does, while the test waits.
    const alive = setInterval(() => {}, 60_000);
    t.after(() => clearInterval(alive));
    const failed = new Promise<Error>((resolve) => {
      const journal = new Journal(file, { syncDelayMs: 5, onSyncError: resolve });
      void journal.open(() => {}).then(() => journal.appendNow({ n: 1 }));
      t.after(() => journal.close());
    });
    assert.match((await failed).message, /EIO/);
    assert.equal(spy.calls, 1);
    assert.equal(await fs.readFile(file, 'utf8'), '{"n":1}\n', 'the line stays (it is in the OS cache)');
  });

  test('sync() brings the fsync forward: callers meanwhile share one; a line written during it gets another; nothing left, none', async (t) => {
    const file = path.join(await tempDir(), 'j.jsonl');
    const spy = await spyDatasync();
    t.after(spy.restore);
    const journal = new Journal(file, { syncDelayMs: 3_600_000 });
    t.after(() => journal.close());
    await journal.open(() => {});
    journal.appendNow({ n: 1 });
    journal.appendNow({ n: 2 });
    const first = journal.sync();
    const same = journal.sync();
    // Written while that fsync runs: it may not cover this line, so the next sync makes one that does.
    journal.appendNow({ n: 3 });
    const later = journal.sync();
    await Promise.all([first, same, later]);
    assert.equal(spy.calls, 2);
    await journal.sync();
    assert.equal(spy.calls, 2, 'every line already durable: no fsync');
  });

  test('sync() rejects when its fsync fails (an event that must be durable is not acknowledged)', async (t) => {
    const file = path.join(await tempDir(), 'j.jsonl');
    const spy = await spyDatasync(true);
    t.after(spy.restore);
    const journal = new Journal(file, { syncDelayMs: 3_600_000 });
    t.after(() => journal.close());
    await journal.open(() => {});
    journal.appendNow({ n: 1 });
    await assert.rejects(journal.sync(), /EIO/);
  });

  test('D-167: a rewrite keeps the lines appendNow writes while it copies its tail, and moves where they are', async (t) => {
    const file = path.join(await tempDir(), 'j.jsonl');
    const journal = new Journal(file, { syncDelayMs: 3_600_000 });
    t.after(() => journal.close());
    await journal.open(() => {});
    journal.appendNow({ n: 0 });
    const probe = await fs.open(path.join(await tempDir(), 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
    await probe.close();
    const original = proto.datasync;
    t.after(() => void (proto.datasync = original));
    let armed = false;
    const late: Array<ReturnType<Journal['appendNow']>> = [];
    // The swap's fsync of the copied tail is an await: a line appendNow writes then is not in that copy.
    proto.datasync = function (this: unknown) {
      if (armed) {
        armed = false;
        late.push(journal.appendNow({ n: 2 }));
      }
      return original.call(this);
    };
    let moved: ReturnType<Journal['appendNow']> | undefined;
    await journal.rewrite(
      () => {},
      async (out) => void (await out(JSON.stringify({ n: 'snapshot' }))),
      (cut, start) => void (moved = { at: late[0]!.at - cut + start, len: late[0]!.len }),
      async () => {
        journal.appendNow({ n: 1 });
        armed = true;
      },
    );
    assert.equal(late.length, 1, 'the line was written during the swap');
    assert.equal(await fs.readFile(file, 'utf8'), '{"n":"snapshot"}\n{"n":1}\n{"n":2}\n');
    assert.equal(journal.readAt(moved!), '{"n":2}');
    assert.equal(journal.lines, 3);
  });

  test('a failed write leaves no partial line and throws', async () => {
    const file = path.join(await tempDir(), 'j.jsonl');
    const journal = new Journal(file);
    await journal.open(() => {});
    journal.appendNow({ n: 1 });
    await journal.close();
    assert.throws(() => journal.appendNow({ n: 2 }), /closed/);
    assert.equal(await fs.readFile(file, 'utf8'), '{"n":1}\n');
  });
});
