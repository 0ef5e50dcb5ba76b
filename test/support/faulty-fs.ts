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

  const fault: DiskFault = { full: false, refused: 0, restore: () => {} };
  const patches: Array<[Record<string, AnyFn>, string, AnyFn]> = [];
  const patch = (target: Record<string, AnyFn>, name: string) => {
    const original = target[name]!;
    patches.push([target, name, original]);
    target[name] = async function (this: unknown, ...args: unknown[]) {
      if (fault.full) {
        fault.refused++;
        throw enospc();
      }
      return original.apply(this, args);
    };
  };
  // The synchronous write(2) too (the rate-limit journal writes its counts with it).
  const writeSync = fsSync.writeSync;
  patches.push([fsSync as unknown as Record<string, AnyFn>, 'writeSync', writeSync]);
  (fsSync as unknown as Record<string, AnyFn>).writeSync = function (this: unknown, ...args: unknown[]) {
    if (fault.full) {
      fault.refused++;
      throw enospc();
    }
    return (writeSync as AnyFn).apply(this, args);
  };
  patch(handleProto, 'write');
  patch(handleProto, 'writeFile');
  patch(handleProto, 'appendFile');
  patch(fs as unknown as Record<string, AnyFn>, 'writeFile');
  patch(fs as unknown as Record<string, AnyFn>, 'appendFile');
  fault.restore = () => {
    for (const [target, name, original] of patches) target[name] = original;
  };
  return fault;
}
