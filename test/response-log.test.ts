// The file store's response log (src/store/file/response-log.ts): a follower gets an event, and its append
// resolves, only once it is written, so that no client sees an event that a kill -9 would then lose
// (D-38 rebuilds an interrupted response from what its file holds; test/proof/resumable-crash.test.ts
// is the crash).
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { UnsequencedEvent } from '../src/contract/index.ts';
import { ResponseEventsExpired } from '../src/core/errors.ts';
import { PastIndex } from '../src/store/file/past-index.ts';
import { ResponseLog } from '../src/store/file/response-log.ts';
import { discard, SpareFiles } from '../src/store/file/spare-files.ts';
import { type LiveResponseStart, RESPONSE_LOOKUP_RETENTION_MS } from '../src/store/types.ts';

const DAY = 86_400_000;
import { tempDir } from './support/helpers.ts';

type AnyFn = (...args: any[]) => any;

test('an event is followed (and traced), and its append resolves, only once it is written to its file; the first, kept with the begin, at once (D-35 revised)', async () => {
  const probe = await fs.open(path.join(os.tmpdir(), `parley-rl-probe-${process.pid}`), 'w');
  const proto = Object.getPrototypeOf(probe) as Record<string, AnyFn>;
  await probe.close();
  await fs.rm(path.join(os.tmpdir(), `parley-rl-probe-${process.pid}`), { force: true });
  const write = proto.write!;
  // Holds the file writes of events (their JSON has "event"), as a slow disk would.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let holding = false;
  const writes: string[] = [];
  proto.write = async function (this: unknown, ...args: unknown[]) {
    // The log writes Buffers (whole, by writeAll).
    const text = Buffer.isBuffer(args[0]) ? args[0].toString('utf8') : typeof args[0] === 'string' ? args[0] : undefined;
    if (text !== undefined) writes.push(text);
    if (holding && text?.includes('"event"')) await held;
    return write.apply(this, args);
  };
  const log = new ResponseLog({ dir: await tempDir() });
  try {
    await log.open();
    const created = { event: 'response.created', data: { id: 'resp_w', object: 'response', status: 'in_progress' } } as UnsequencedEvent;
    const start = { id: 'resp_w', app_id: 'app_demo', conversation_id: 'conv_w', created_at: 1, input: { content: 'hi', metadata: null } };
    await log.begin(start, created);
    // Written with the start line, in the begin's one write (so made durable by its fdatasync).
    assert.deepEqual(writes, [`${JSON.stringify(start)}\n${JSON.stringify(created)}\n`]);
    holding = true;
    const follower = log.follow('resp_w', -1)[Symbol.asyncIterator]();
    assert.deepEqual((await follower.next()).value, created, 'the first event is followed once begun');
    const second = follower.next();
    let kept = false;
    const delta = { event: 'response.output_text.delta', data: { delta: 'hi', output_index: 0, content_index: 0 } } as UnsequencedEvent;
    const appended = log.append('resp_w', delta).then(() => (kept = true));
    // In memory, not yet on disk: neither a trace nor a follower shows it, and its append has not
    // resolved (the producer's own answer takes an event once its append resolves: KeptEvents).
    assert.deepEqual((await log.trace('resp_w'))!.events, [created]);
    assert.equal(kept, false, 'append resolved before its write');
    release();
    await appended;
    assert.deepEqual((await second).value, delta);
    assert.equal((await log.trace('resp_w'))!.events!.length, 2);
    holding = false;
    await log.append('resp_w', { event: 'response.completed', data: { id: 'resp_w', status: 'completed' } });
    assert.equal((await follower.next()).value?.event, 'response.completed');
    assert.equal((await follower.next()).done, true);
  } finally {
    release();
    proto.write = write;
    await log.close();
  }
});

// D-93: memory bounded by design, files by state, start-up reads the hour only.
const start = (id: string, input: LiveResponseStart['input'] = { content: 'hi', metadata: null }): LiveResponseStart => ({
  id,
  app_id: 'app_demo',
  conversation_id: `conv_${id.slice(5)}`,
  created_at: 1_760_000_000,
  input,
});
/** Events as the log stores them (it does not read their payload). */
const ev = (event: string, data: object) => ({ event, data }) as unknown as UnsequencedEvent;
const delta = (n: number) => ev('response.output_text.delta', { delta: `word ${n} `, n });
const done = (id: string) => ev('response.completed', { id, status: 'completed' });
const created = (id: string) => ev('response.created', { id, object: 'response', status: 'in_progress' });

/** A whole response: begun, `deltas` deltas, completed. */
async function produce(log: ResponseLog, s: LiveResponseStart, deltas: number): Promise<void> {
  assert.deepEqual(await log.begin(s, created(s.id)), {});
  for (let n = 0; n < deltas; n++) await log.append(s.id, delta(n));
  await log.append(s.id, done(s.id));
}

async function collect(events: AsyncIterable<UnsequencedEvent>): Promise<UnsequencedEvent[]> {
  const out: UnsequencedEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

/** Files under `dir`, relative, sorted; the empty response files created ahead (`*.spare`, D-35) left out. */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile() && !e.name.endsWith('.spare')) out.push(path.relative(dir, path.join(e.parentPath, e.name)));
  }
  return out.sort();
}

test('D-93: nothing of an ended response stays in memory: neither what it was asked nor its events', async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const dir = await tempDir();
  const log = new ResponseLog({ dir });
  await log.open();
  const refs: WeakRef<object>[] = [];
  try {
    // Made in a function of its own: no frame of this test still holds one.
    const one = (i: number) => {
      const metadata = { a: Array.from({ length: 500 }, () => ({})) };
      refs.push(new WeakRef(metadata));
      return produce(log, start(`resp_m${i}`, { content: `message ${i}`, metadata }), 30);
    };
    for (let i = 0; i < 20; i++) await one(i);
    // A minute of the hour's index per minute of the files' ends: these may straddle a minute's turn.
    const minutes = (await fs.readdir(path.join(dir, 'ended'))).length;
    assert.ok(minutes === 1 || minutes === 2, `${minutes} minutes`);
    assert.deepEqual(log.held(), { running: 0, events: 0, eventBytes: 0, apps: 1, minutes });
    await new Promise(setImmediate);
    gc();
    assert.deepEqual(
      refs.flatMap((r, i) => (r.deref() === undefined ? [] : [i])),
      [],
      "an ended response's input is still referenced",
    );
    // Read from its file when asked.
    const t = await log.trace('resp_m3');
    assert.equal(t!.events!.length, 32);
    assert.equal(t!.start.conversation_id, 'conv_m3');
  } finally {
    await log.close();
  }
});

test('D-93: a running response keeps a window of its last events; followers behind it read its file, in order', async () => {
  const log = new ResponseLog({ dir: await tempDir(), windowBytes: 300 });
  await log.open();
  try {
    const s = start('resp_win');
    await log.begin(s, created(s.id));
    const early = collect(log.follow(s.id, -1));
    // Each append resolves once written: the window is then what memory holds.
    for (let n = 0; n < 200; n++) await log.append(s.id, delta(n));
    const held = log.held();
    assert.equal(held.running, 1);
    assert.ok(held.eventBytes <= 300 + 100, `${held.eventBytes} bytes of events held`);
    assert.ok(held.events < 10, `${held.events} events held`);
    // A trace, and a follower from the middle, read the file for what the window no longer holds.
    const traced = (await log.trace(s.id))!;
    assert.deepEqual(
      traced.events!.slice(1).map((e) => (e.data as unknown as { n: number }).n),
      Array.from({ length: 200 }, (_, n) => n),
    );
    const middle = collect(log.follow(s.id, 100));
    await log.append(s.id, done(s.id));
    const all = await early;
    assert.equal(all.length, 202);
    assert.deepEqual(all.slice(0, 201), traced.events);
    assert.deepEqual(await middle, all.slice(101));
    assert.deepEqual(log.held().running, 0);
  } finally {
    await log.close();
  }
});

test('D-93: files by state, the hour listed by minute; a minute past the retention goes to the past index, its files removed', async () => {
  const dir = await tempDir();
  let now = Date.UTC(2026, 0, 1, 12, 0, 30);
  const log = new ResponseLog({ dir, ttlMs: 3_600_000, now: () => now });
  await log.open();
  try {
    const s = start('resp_0123456789abcdef012345ab');
    await log.begin(s, created(s.id));
    assert.deepEqual(await filesUnder(dir), [`running/${s.id}.jsonl`]);
    await log.append(s.id, delta(0));
    await log.append(s.id, done(s.id));
    const files = await filesUnder(dir);
    assert.equal(files.length, 2);
    assert.equal(files[0], `ended/${files[0]!.slice(6, -6)}.jsonl`);
    assert.equal(files[1], `events/ab/${s.id}.jsonl`);
    const size = (await fs.stat(path.join(dir, files[1]!))).size;
    assert.equal(log.bytesOf('app_demo'), size, 'D-27: its file counts in the quota');
    const line = JSON.parse(await fs.readFile(path.join(dir, files[0]!), 'utf8'));
    assert.deepEqual(
      { ...line, end: undefined },
      { id: s.id, a: 'app_demo', c: s.conversation_id, at: s.created_at, b: size, end: undefined },
    );
    // Past the hour, to the millisecond: the events are gone for readers, whatever the files.
    now = line.end + 3_600_000;
    assert.deepEqual(await log.trace(s.id), {
      start: { id: s.id, app_id: 'app_demo', conversation_id: s.conversation_id, created_at: s.created_at },
      events: null,
      ended: true,
    });
    await log.sweep();
    assert.equal((await filesUnder(dir)).length, 2, 'its minute is dropped a minute later');
    now += 2 * 60_000;
    await log.sweep();
    const day = Math.floor(line.end / 86_400_000);
    assert.deepEqual(await filesUnder(dir), [`past/${day}/ab.jsonl`], 'the past index: a folder per day of ends');
    assert.equal(log.bytesOf('app_demo'), 0);
    assert.deepEqual(log.held(), { running: 0, events: 0, eventBytes: 0, apps: 0, minutes: 0 });
    // D-36: the look-up still finds where it belongs; a resume is told its events expired.
    assert.deepEqual((await log.trace(s.id))!.start.conversation_id, s.conversation_id);
    await assert.rejects(collect(log.follow(s.id, -1)), ResponseEventsExpired);
    assert.equal(await log.trace('resp_0123456789abcdef012345ff'), undefined);
    assert.equal(await log.trace('../../etc/passwd'), undefined);
  } finally {
    await log.close();
  }
});

test('D-93: the past index is bounded: a look-up finds a response for RESPONSE_LOOKUP_RETENTION_MS after its end (to the millisecond), then not, and its day is dropped', async () => {
  const dir = await tempDir();
  let now = Date.UTC(2026, 0, 1, 23, 30);
  const log = new ResponseLog({ dir, ttlMs: 3_600_000, now: () => now });
  await log.open();
  try {
    const id = 'resp_0123456789abcdef0123450a';
    await produce(log, start(id), 1);
    const [listed] = (await filesUnder(dir)).filter((f) => f.startsWith('ended/'));
    const end = JSON.parse(await fs.readFile(path.join(dir, listed!), 'utf8')).end as number;
    now = end + 3_600_000 + 3 * 60_000;
    await log.sweep();
    assert.ok((await filesUnder(dir)).includes(`past/${Math.floor(end / DAY)}/0a.jsonl`));
    // To the millisecond: found until its end is RESPONSE_LOOKUP_RETENTION_MS ago, then not.
    now = end + RESPONSE_LOOKUP_RETENTION_MS - 1;
    assert.equal((await log.trace(id))?.start.conversation_id, start(id).conversation_id);
    now += 1;
    assert.equal(await log.trace(id), undefined, 'past the retention: not found (a 404)');
    now = end + RESPONSE_LOOKUP_RETENTION_MS + DAY;
    await log.sweep();
    assert.deepEqual(await filesUnder(dir), [], 'every day dropped: the index holds the retention, not the history');
  } finally {
    await log.close();
  }
});

test('D-93: the past index drops a day folder whole once its last end is past the retention, and only that day', async () => {
  const dir = await tempDir();
  const retention = 10 * DAY;
  let now = Date.UTC(2026, 0, 5, 12);
  const past = new PastIndex(dir, retention, () => now);
  await past.open();
  const ref = (id: string) => ({ id, app_id: 'app_demo', conversation_id: `conv_${id.slice(5)}`, created_at: 1 });
  const d1 = Date.UTC(2026, 0, 1, 23, 59);
  const d2 = Date.UTC(2026, 0, 2, 0, 1);
  await past.append([
    { ref: ref('resp_x1'), end: d1 },
    { ref: ref('resp_y2'), end: d2 },
  ]);
  assert.deepEqual(await filesUnder(dir), [`past/${Math.floor(d1 / DAY)}/x1.jsonl`, `past/${Math.floor(d2 / DAY)}/y2.jsonl`]);
  now = d1 + retention + 30_000;
  assert.equal(await past.find('resp_x1'), undefined);
  await past.sweep();
  assert.equal((await filesUnder(dir)).length, 2, 'the first day is kept until its whole day is past the retention');
  now = Math.ceil(d1 / DAY) * DAY + retention;
  await past.sweep();
  assert.deepEqual(await filesUnder(dir), [`past/${Math.floor(d2 / DAY)}/y2.jsonl`]);
  assert.equal((await past.find('resp_y2'))?.conversation_id, 'conv_y2');
});

test('D-93: start-up reads the running files and the hour, never the past index', async () => {
  const dir = await tempDir();
  const first = new ResponseLog({ dir });
  await first.open();
  await produce(first, start('resp_e1'), 3);
  await produce(first, start('resp_e2'), 3);
  await first.begin(start('resp_run', { content: 'unfinished', metadata: { k: 'v' } }), created('resp_run'));
  await first.append('resp_run', delta(0));
  await first.close();
  // A process that died between a response's terminal event and its listing.
  const cut = start('resp_cut');
  await fs.writeFile(
    path.join(dir, 'running', 'resp_cut.jsonl'),
    [cut, created(''), done('resp_cut')].map((l) => `${JSON.stringify(l)}\n`).join(''),
  );
  // A past index too damaged to read: start-up does not open it.
  const today = String(Math.floor(Date.now() / DAY));
  await fs.mkdir(path.join(dir, 'past', today), { recursive: true });
  await fs.writeFile(path.join(dir, 'past', today, 'e1.jsonl'), 'not json\n');
  for (let round = 0; round < 2; round++) {
    const log = new ResponseLog({ dir });
    await log.open();
    try {
      const left = await log.unfinished();
      assert.deepEqual(
        left.map((t) => [t.start.id, t.start.input, t.events!.length]),
        [['resp_run', { content: 'unfinished', metadata: { k: 'v' } }, 2]],
      );
      assert.equal((await log.trace('resp_cut'))!.events!.length, 2);
      const files = await filesUnder(dir);
      const sizes = await Promise.all(
        files.filter((f) => /^(events|running)\//.test(f)).map(async (f) => (await fs.stat(path.join(dir, f))).size),
      );
      assert.equal(
        log.bytesOf('app_demo'),
        sizes.reduce((a, b) => a + b, 0),
        'the quota counts each file once',
      );
      const listed = (
        await Promise.all(files.filter((f) => f.startsWith('ended/')).map((f) => fs.readFile(path.join(dir, f), 'utf8')))
      ).join('');
      assert.equal(listed.split('\n').filter((l) => l.includes('"resp_cut"')).length, 1, 'listed once, whatever the restarts');
    } finally {
      await log.close();
    }
  }
});

test('D-35 (revised): a begin takes a file created ahead; start-up removes the spares never begun and names a begun one after its id', async () => {
  const dir = await tempDir();
  const running = path.join(dir, 'running');
  const spares = async () => (await fs.readdir(running)).filter((n) => n.endsWith('.spare')).sort();
  const first = new ResponseLog({ dir, spares: 3 });
  await first.open();
  const ready = await spares();
  assert.equal(ready.length, 3, 'created at start-up');
  await first.begin(start('resp_taken'), created('resp_taken'));
  const after = await spares();
  assert.equal(ready.filter((n) => !after.includes(n)).length, 1, 'one spare is now the response');
  await first.append('resp_taken', delta(0));
  // Followed once written, and written once the file is named after the response.
  for await (const e of first.follow('resp_taken', 0)) if (e.event === delta(0).event) break;
  assert.ok((await fs.readdir(running)).includes('resp_taken.jsonl'));
  // A crash: the process's spares stay, and one begun response's rename was undone (never synced).
  const left = await spares();
  assert.ok(left.length > 0);
  await fs.rename(path.join(running, 'resp_taken.jsonl'), path.join(running, 'undone-rename.spare'));
  // A spare whose start line a crash tore: nothing was sent for it.
  await fs.writeFile(path.join(running, 'torn.spare'), JSON.stringify(start('resp_torn')).slice(0, 40));
  const log = new ResponseLog({ dir, spares: 2 });
  await log.open();
  try {
    assert.deepEqual(
      (await log.unfinished()).map((t) => [t.start.id, t.events!.length]),
      [['resp_taken', 2]],
      'only the begun response is found; an empty or torn spare is never a response',
    );
    const now = await spares();
    assert.equal(now.length, 2);
    assert.ok(!now.some((n) => left.includes(n) || n === 'torn.spare' || n === 'undone-rename.spare'), now.join(', '));
    assert.ok((await fs.readdir(running)).includes('resp_taken.jsonl'));
    assert.equal(await log.trace('resp_torn'), undefined);
    for (const n of now) assert.equal((await fs.stat(path.join(running, n))).size, 0);
  } finally {
    await log.close();
  }
  assert.deepEqual(await spares(), [], 'close removes the spares not taken');
});

test('D-35 (revised): spares that cannot be created leave each begin to create its own file, said once until they can', async () => {
  const dir = path.join(await tempDir(), 'running');
  const warnings: string[] = [];
  const spares = new SpareFiles(dir, 2, (m) => warnings.push(m));
  try {
    await spares.fill();
    assert.equal(spares.take(), undefined, 'no folder yet: no spare');
    await spares.fill();
    assert.equal(warnings.length, 1, warnings.join('\n'));
    await fs.mkdir(dir);
    await spares.fill();
    const got = spares.take();
    assert.ok(got && (await fs.stat(got.file)).size === 0);
    await discard(got);
  } finally {
    await spares.close();
  }
  assert.deepEqual(await fs.readdir(dir), [], 'close removes the spares not taken');
});
