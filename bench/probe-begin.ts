// Probe: what D-35's durable begin costs on this machine's disk, one at a time, as the response log
// does it (open, write the start line, sync the file's data and its folder's entry), with the two
// syncs one after the other and at once, beside a raw open+write+close with no sync; in os.tmpdir()
// and, for comparison, /dev/shm (tmpfs, where a sync is free).
// `node --import tsx bench/probe-begin.ts [count=300]`
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { syncDir } from '../src/store/file/durable.ts';
import { percentile } from './measure.ts';

const count = Number(process.argv[2] ?? 300);
const FLAGS = fsSync.constants.O_WRONLY | fsSync.constants.O_CREAT | fsSync.constants.O_APPEND;
const line = `${JSON.stringify({ id: 'resp_0123456789abcdef01234567', app_id: 'app_demo', conversation_id: 'conv_0123456789abcdef01234567', created_at: 1_760_000_000, input: { content: 'Tell me about the Montreal office.', metadata: null } })}\n`;

type Way = 'no sync' | 'syncs in turn' | 'syncs at once';
async function once(dir: string, i: number, way: Way): Promise<number> {
  const t0 = performance.now();
  const fh = await fs.open(path.join(dir, `${way.replace(/ /g, '-')}-${i}.jsonl`), FLAGS);
  await fh.write(line);
  if (way === 'syncs in turn') {
    await fh.datasync();
    await syncDir(dir);
  } else if (way === 'syncs at once') await Promise.all([fh.datasync(), syncDir(dir)]);
  const t = performance.now() - t0;
  await fh.close();
  return t;
}

for (const root of [os.tmpdir(), '/dev/shm']) {
  if (!fsSync.existsSync(root)) continue;
  const dir = await fs.mkdtemp(path.join(root, 'probe-begin-'));
  try {
    const t: Record<Way, number[]> = { 'no sync': [], 'syncs in turn': [], 'syncs at once': [] };
    // Alternating, so that a disturbance lands on all three.
    for (let i = 0; i < count; i++) for (const way of Object.keys(t) as Way[]) t[way].push(await once(dir, i, way));
    console.log(
      `${root}: ${(Object.keys(t) as Way[]).map((w) => `${w} p50 ${percentile(t[w], 50).toFixed(3)} ms (p90 ${percentile(t[w], 90).toFixed(3)})`).join('; ')}`,
    );
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}
