// Probe: what D-35's durable begin costs on this machine's disk, one at a time, as the response log
// does it (open, write the start line, sync the file's data and its folder's entry), with the two
// syncs one after the other and at once, beside a raw open+write+close with no sync; and from a pool
// of files created and synced ahead (D-35 revised: only the start line's write and its `fdatasync`
// on the path, the file renamed to its id before them, or not renamed); in os.tmpdir() and, for
// comparison, /dev/shm (tmpfs, where a sync is free).
// Then `ResponseLog.begin` itself, with its spares and without (`spares: 0`), in alternation; a
// response begun is ended at once (not timed), so that each begin is alone.
// `node --import tsx bench/lab/probe-begin.ts [count=300]`
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { syncDir } from '../../src/store/file/durable.ts';
import { ResponseLog } from '../../src/store/file/response-log.ts';
import { percentile } from '../measure.ts';

const count = Number(process.argv[2] ?? 300);
const FLAGS = fsSync.constants.O_WRONLY | fsSync.constants.O_CREAT | fsSync.constants.O_APPEND;
const line = `${JSON.stringify({ id: 'resp_0123456789abcdef01234567', app_id: 'app_demo', conversation_id: 'conv_0123456789abcdef01234567', created_at: 1_760_000_000, input: { content: 'Tell me about the Montreal office.', metadata: null } })}\n`;

const WAYS = [
  'no sync',
  'syncs in turn',
  'syncs at once',
  'pool, renamed',
  'pool, renamed after',
  'pool, writeSync, renamed after',
  'pool, not renamed',
] as const;
type Way = (typeof WAYS)[number];

/** A file created and synced, with its folder, ahead of the timed part (as the pool does). */
async function spare(dir: string, i: number): Promise<{ fh: fs.FileHandle; file: string }> {
  const file = path.join(dir, `spare-${i}`);
  const fh = await fs.open(file, FLAGS | fsSync.constants.O_EXCL);
  await fh.sync();
  await syncDir(dir);
  return { fh, file };
}

async function once(dir: string, i: number, way: Way): Promise<number> {
  const name = path.join(dir, `${way.replace(/[ ,]+/g, '-')}-${i}.jsonl`);
  const ahead = way.startsWith('pool') ? await spare(dir, i) : undefined;
  const t0 = performance.now();
  let fh: fs.FileHandle;
  if (ahead) {
    fh = ahead.fh;
    if (way === 'pool, renamed') fsSync.renameSync(ahead.file, name);
    if (way === 'pool, writeSync, renamed after') fsSync.writeSync(fh.fd, line);
    else await fh.write(line);
    await fh.datasync();
    if (way.endsWith('renamed after')) fsSync.renameSync(ahead.file, name);
  } else {
    fh = await fs.open(name, FLAGS);
    await fh.write(line);
    if (way === 'syncs in turn') {
      await fh.datasync();
      await syncDir(dir);
    } else if (way === 'syncs at once') await Promise.all([fh.datasync(), syncDir(dir)]);
  }
  const t = performance.now() - t0;
  await fh.close();
  return t;
}

for (const root of [os.tmpdir(), '/dev/shm']) {
  if (!fsSync.existsSync(root)) continue;
  const dir = await fs.mkdtemp(path.join(root, 'probe-begin-'));
  try {
    const t = Object.fromEntries(WAYS.map((w) => [w, [] as number[]])) as Record<Way, number[]>;
    // Alternating, so that a disturbance lands on all of them.
    for (let i = 0; i < count; i++) for (const way of WAYS) t[way].push(await once(dir, i, way));
    console.log(`${root}:`);
    for (const w of WAYS)
      console.log(`  ${w.padEnd(18)} p50 ${percentile(t[w], 50).toFixed(3)} ms (p90 ${percentile(t[w], 90).toFixed(3)})`);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** `ResponseLog.begin` with spares (the default) and without, alternating, one at a time. */
async function logBegins(root: string): Promise<void> {
  const dir = await fs.mkdtemp(path.join(root, 'probe-log-'));
  const logs = {
    spares: new ResponseLog({ dir: path.join(dir, 'a') }),
    'no spares': new ResponseLog({ dir: path.join(dir, 'b'), spares: 0 }),
  };
  const t: Record<keyof typeof logs, number[]> = { spares: [], 'no spares': [] };
  try {
    for (const log of Object.values(logs)) await log.open();
    for (let i = 0; i < count; i++)
      for (const [way, log] of Object.entries(logs) as [keyof typeof logs, ResponseLog][]) {
        const id = `resp_${way === 'spares' ? 'a' : 'b'}${String(i).padStart(23, '0')}`;
        const t0 = performance.now();
        await log.begin(
          {
            id,
            app_id: 'app_demo',
            conversation_id: `conv_${i}`,
            created_at: 1_760_000_000,
            input: { content: 'Tell me about the Montreal office.', metadata: null },
          },
          { event: 'response.created', data: { id, object: 'response', status: 'in_progress' } } as never,
        );
        t[way].push(performance.now() - t0);
        await log.append(id, { event: 'response.completed', data: {} } as never);
      }
    console.log(`${root}, ResponseLog.begin:`);
    for (const [w, a] of Object.entries(t))
      console.log(`  ${w.padEnd(18)} p50 ${percentile(a, 50).toFixed(3)} ms (p90 ${percentile(a, 90).toFixed(3)})`);
  } finally {
    for (const log of Object.values(logs)) await log.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
}
for (const root of [os.tmpdir(), '/dev/shm']) if (fsSync.existsSync(root)) await logBegins(root);
