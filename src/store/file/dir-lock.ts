// The data directory's LOCK (D-25): which process serves the directory, and whether that process is
// still running. A pid alone is not enough: right after `kill -9` the process lingers as a zombie
// until its parent reaps it, and after a container restart the pid belongs to someone else.
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { DataFileError } from '../../core/errors.ts';

/**
 * Who holds a LOCK. On Linux also when it started (clock ticks since boot, field 22 of
 * /proc/<pid>/stat) and in which boot: with both, a process with the same pid is not taken for it.
 */
export interface Holder {
  pid: number;
  start?: string;
  boot?: string;
}

interface ProcStat {
  state: string;
  start: string;
}

/** State and start time of `pid` from /proc; null if there is no such process, undefined without /proc. */
export function procStat(pid: number): ProcStat | null | undefined {
  let text: string;
  try {
    text = fsSync.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ESRCH') {
      return fsSync.existsSync('/proc/self/stat') ? null : undefined;
    }
    return undefined;
  }
  // The command name may hold spaces and parentheses: the fields start after the last ")".
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0]!, start: fields[19]! };
}

function bootId(): string | undefined {
  try {
    return fsSync.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** This process as a LOCK records it. */
export function currentHolder(): Holder {
  const stat = procStat(process.pid);
  const boot = bootId();
  return { pid: process.pid, ...(stat ? { start: stat.start } : {}), ...(boot ? { boot } : {}) };
}

/**
 * Whether the process that wrote `h` is running now. On Linux: a process with its pid, not a zombie
 * (Z, or X: dead), started at the same tick of the same boot. Elsewhere, or for a LOCK that records
 * only a pid (written by an older Parley): a process with that pid exists.
 */
export function isRunning(h: Holder): boolean {
  const stat = procStat(h.pid);
  if (stat === null) return false;
  if (stat !== undefined) {
    if (stat.state === 'Z' || stat.state === 'X') return false;
    const boot = bootId();
    if (h.boot !== undefined && boot !== undefined && h.boot !== boot) return false;
    if (h.start !== undefined && h.start !== stat.start) return false;
    return true;
  }
  try {
    process.kill(h.pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A LOCK's content: JSON, or a bare pid (older Parley); undefined if it names no process. */
export function parseHolder(text: string): Holder | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return { pid: Number(trimmed) };
  try {
    const h = JSON.parse(trimmed) as Partial<Holder>;
    if (!Number.isSafeInteger(h.pid) || (h.pid as number) <= 0) return undefined;
    return {
      pid: h.pid as number,
      ...(typeof h.start === 'string' ? { start: h.start } : {}),
      ...(typeof h.boot === 'string' ? { boot: h.boot } : {}),
    };
  } catch {
    return undefined;
  }
}

async function readText(file: string): Promise<string | undefined> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The directory is served by another running process (its pid). */
export class DirLockedError extends DataFileError {
  constructor(
    dataDir: string,
    readonly pid: number,
  ) {
    super(dataDir, `is in use by another Parley process (pid ${pid}); stop it or choose another --data-dir`);
  }
}

/** The LOCK cannot be written: a full disk names the LOCK (D-94), anything else the directory. */
const notWritable = (dataDir: string, err: unknown, file = path.join(dataDir, 'LOCK')) => {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return Object.assign(err as NodeJS.ErrnoException, { path: file });
  return new DataFileError(dataDir, `is not writable (${code}); Parley needs to write its data there`);
};

/**
 * Takes `file` for this process, or throws naming the running holder. The LOCK appears whole and at
 * once (written aside, then hard-linked into place, which fails if one exists), so two processes
 * starting together cannot both take it; a stale one is moved aside only if it is still the one
 * judged stale, otherwise it is put back.
 */
export async function acquireLock(file: string, dataDir: string): Promise<string> {
  const me = currentHolder();
  const text = `${JSON.stringify(me)}\n`;
  const candidate = `${file}.${process.pid}.new`;
  try {
    await fs.writeFile(candidate, text);
  } catch (err) {
    throw notWritable(dataDir, err);
  }
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        await fs.link(candidate, file);
        return text;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'EEXIST') {
          // A file system without hard links: an exclusive create (a reader may see it empty for a moment).
          if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw notWritable(dataDir, err);
          try {
            await fs.writeFile(file, text, { flag: 'wx' });
            return text;
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw notWritable(dataDir, e);
          }
        }
      }
      const seen = await readText(file);
      if (seen === undefined) continue;
      const holder = parseHolder(seen);
      // A LOCK of this very process (a store opened twice in one process) is taken over, as a stale one.
      if (holder && holder.pid !== process.pid && isRunning(holder)) {
        throw new DirLockedError(dataDir, holder.pid);
      }
      const aside = `${file}.${process.pid}.stale`;
      try {
        await fs.rename(file, aside);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw notWritable(dataDir, err);
      }
      // Another process may have taken the LOCK between the read and the rename: give it back.
      if ((await readText(aside)) !== seen) await fs.link(aside, file).catch(() => {});
      await fs.rm(aside, { force: true });
    }
    throw new DataFileError(
      dataDir,
      'could not take its LOCK: other processes are starting on it at the same time; start one Parley per data directory',
    );
  } finally {
    await fs.rm(candidate, { force: true });
  }
}

/** Removes `file` if it is still the LOCK `text` took (a LOCK taken over meanwhile is left alone). */
export async function releaseLock(file: string, text: string): Promise<void> {
  if ((await readText(file).catch(() => undefined)) === text) await fs.rm(file, { force: true });
}
