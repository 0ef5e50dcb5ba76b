// D-94 on D-93's files: a response whose file lost an event (a full disk mid-stream) shows how it
// ended before any client is told, or its file is not where start-up would take it for a crash's
// (D-38) and save the response `interrupted` into the conversation its client was told it was not
// saved in.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { UnsequencedEvent } from '../../contract/index.ts';
import { syncDir, writeDurably } from './durable.ts';
import type { PastIndex } from './past-index.ts';
import { readResponseFile, type ResponsePaths } from './response-files.ts';
import type { Live } from './running-response.ts';

/** The first `n` lines of a file, raw: a damaged response's file has its start line and the events before its window whole. */
async function readHead(file: string, n: number): Promise<string[]> {
  const lines: string[] = [];
  const fh = await fs.open(file, 'r');
  try {
    const chunk = Buffer.allocUnsafe(1 << 16);
    let carry: Buffer[] = [];
    let pos = 0;
    while (lines.length < n) {
      const got = (await fh.read(chunk, 0, chunk.length, pos)).bytesRead;
      if (got === 0) throw new Error(`${file} ends before line ${lines.length + 1}`);
      pos += got;
      const view = chunk.subarray(0, got);
      let start = 0;
      for (let end = view.indexOf(0x0a); end !== -1 && lines.length < n; end = view.indexOf(0x0a, start)) {
        lines.push(Buffer.concat([...carry, view.subarray(start, end)]).toString('utf8'));
        carry = [];
        start = end + 1;
      }
      if (start < got) carry.push(Buffer.from(view.subarray(start)));
    }
  } finally {
    await fh.close();
  }
  return lines;
}

/**
 * An ended response whose file lost an event, held whole: its start line, and the events before its
 * window (written before the loss, so whole in the file) ahead of those the window holds.
 */
export async function holdWhole(paths: ResponsePaths, l: Live): Promise<void> {
  const [startLine, ...before] = await readHead(paths.running(l.ref.id), 1 + l.first);
  const held = before.map((raw) => ({ event: JSON.parse(raw) as UnsequencedEvent, bytes: Buffer.byteLength(raw) + 1 }));
  l.held.unshift(...held);
  l.heldBytes += held.reduce((n, h) => n + h.bytes, 0);
  l.first = 0;
  l.startLine = startLine;
}

/**
 * Writes a held-whole response's file (temp file, rename), or, the first time it cannot, sets it
 * aside: cut to its start line (which frees space rather than taking it) and renamed `<id>.unwritten`,
 * which start-up lists as past (its look-up then says failed) if it is never written. Resolves the
 * file's size once written.
 */
export async function writeWhole(paths: ResponsePaths, l: Live, warn?: (message: string) => void): Promise<number | undefined> {
  const file = paths.running(l.ref.id);
  const text = [l.startLine!, ...l.held.map((h) => JSON.stringify(h.event))].map((line) => `${line}\n`).join('');
  try {
    await writeDurably(file, text);
    await syncDir(path.dirname(file));
    if (l.unwritten) await fs.rm(paths.aside(l.ref.id), { force: true });
    l.unwritten = false;
    return Buffer.byteLength(text);
  } catch (err) {
    if (l.unwritten) return undefined;
    l.unwritten = true;
    warn?.(`${file}: cannot be written (${(err as Error).message}); the response's ending is kept in memory until it can`);
    try {
      await fs.truncate(file, Buffer.byteLength(l.startLine!) + 1);
      await fs.rename(file, paths.aside(l.ref.id));
    } catch (e) {
      await fs.rm(file, { force: true }).catch(() => {});
      warn?.(`${file}: cannot be set aside (${(e as Error).message}); removed`);
    }
    return undefined;
  }
}

/**
 * A response set aside and never written (start-up, or the sweep once its retention has passed): its
 * start goes to the past index, where a look-up finds it with no events (D-36), then the file goes.
 */
export async function settleAside(paths: ResponsePaths, past: PastIndex, id: string, end: number): Promise<void> {
  const aside = paths.aside(id);
  const written = await fs.stat(paths.running(id)).then(
    () => true,
    () => false,
  );
  const read = written ? undefined : await readResponseFile(aside);
  if (read) {
    const { start } = read;
    await past.append([
      { ref: { id: start.id, app_id: start.app_id, conversation_id: start.conversation_id, created_at: start.created_at }, end },
    ]);
  }
  await fs.rm(aside, { force: true });
}
