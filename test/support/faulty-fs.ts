// Test helper: fault injection at the fs layer. While "full", every file write in this process fails
// the way a full disk makes it fail (ENOSPC from write(2)), whoever the caller; reads keep working.
// Portable (no root, no mount), and it drives the real error paths of the store and the journals.
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

type AnyFn = (...args: any[]) => any;

export interface DiskFault {
  full: boolean;
  /**
   * While full, only writes to the files it accepts fail (the path a file was opened with; a write
   * by descriptor, whose file is unknown, then goes through). Unset: every write fails.
   */
  only: ((file: string) => boolean) | undefined;
  /** Writes refused while full. */
  refused: number;
  restore(): void;
}

function enospc(): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error('ENOSPC: no space left on device, write');
  err.code = 'ENOSPC';
  err.errno = -28;
  err.syscall = 'write';
  return err;
}

export async function injectDiskFault(): Promise<DiskFault> {
  const probe = await fs.open(path.join(os.tmpdir(), `parley-probe-${process.pid}`), 'w');
  const handleProto = Object.getPrototypeOf(probe) as Record<string, AnyFn>;
  await probe.close();
  await fs.rm(path.join(os.tmpdir(), `parley-probe-${process.pid}`), { force: true });

  /** The path each open file handle was opened with, for `only`. */
  const opened = new WeakMap<object, string>();
  const fault: DiskFault = { full: false, only: undefined, refused: 0, restore: () => {} };
  const refuses = (file: string | undefined) => fault.full && (!fault.only || (file !== undefined && fault.only(file)));
  const patches: Array<[Record<string, AnyFn>, string, AnyFn]> = [];
  const patch = (target: Record<string, AnyFn>, name: string, fileOf: (self: unknown, args: unknown[]) => string | undefined) => {
    const original = target[name]!;
    patches.push([target, name, original]);
    target[name] = async function (this: unknown, ...args: unknown[]) {
      if (refuses(fileOf(this, args))) {
        fault.refused++;
        throw enospc();
      }
      return original.apply(this, args);
    };
  };
  const ofHandle = (self: unknown) => opened.get(self as object);
  const ofPath = (_self: unknown, args: unknown[]) => (typeof args[0] === 'string' ? path.resolve(args[0]) : undefined);
  // fs.promises.open, so that a handle's writes know their file.
  const open = fs.open;
  patches.push([fs as unknown as Record<string, AnyFn>, 'open', open as AnyFn]);
  (fs as unknown as Record<string, AnyFn>).open = async function (this: unknown, ...args: unknown[]) {
    const handle = await (open as AnyFn).apply(this, args);
    if (typeof args[0] === 'string') opened.set(handle, path.resolve(args[0]));
    return handle;
  };
  // The synchronous write(2) too (the rate-limit journal writes its counts with it).
  const writeSync = fsSync.writeSync;
  patches.push([fsSync as unknown as Record<string, AnyFn>, 'writeSync', writeSync]);
  (fsSync as unknown as Record<string, AnyFn>).writeSync = function (this: unknown, ...args: unknown[]) {
    if (refuses(undefined)) {
      fault.refused++;
      throw enospc();
    }
    return (writeSync as AnyFn).apply(this, args);
  };
  patch(handleProto, 'write', ofHandle);
  patch(handleProto, 'writeFile', ofHandle);
  patch(handleProto, 'appendFile', ofHandle);
  patch(fs as unknown as Record<string, AnyFn>, 'writeFile', ofPath);
  patch(fs as unknown as Record<string, AnyFn>, 'appendFile', ofPath);
  fault.restore = () => {
    for (const [target, name, original] of patches.reverse()) target[name] = original;
  };
  return fault;
}
