// Durable writes of whole files: temp file, fsync, rename, then fsync of the folder (a rename is only
// durable once its folder is synced).
import fs from 'node:fs/promises';
import path from 'node:path';
import { withFile } from '../../core/errors.ts';

const knownDirs = new Set<string>();

/** Temp file, fsync, rename: the file is whole or absent. The rename is durable once its folder is synced (syncDir). */
export async function writeDurably(file: string, text: string): Promise<void> {
  const dir = path.dirname(file);
  if (!knownDirs.has(dir)) {
    await fs.mkdir(dir, { recursive: true });
    knownDirs.add(dir);
  }
  // One writer per file (its caller chains them), so a fixed temporary name suffices; a crash may
  // leave it behind, and the next write of that file replaces it (start-up also removes `*.tmp`).
  const tmp = `${file}.tmp`;
  const fh = await fs.open(tmp, 'w');
  try {
    await fh.writeFile(text);
    await fh.datasync();
  } catch (err) {
    await fh.close().catch(() => {});
    await fs.rm(tmp, { force: true }).catch(() => {});
    throw withFile(err, tmp);
  }
  await fh.close();
  await fs.rename(tmp, file);
}

/** A rename is only durable once its folder is synced. */
export async function syncDir(dir: string): Promise<void> {
  const dh = await fs.open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}
