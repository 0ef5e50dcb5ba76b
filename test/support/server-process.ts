// A Parley server started as its own process (src/main.ts, for the crash proofs): its base URL, read
// from the banner once it listens.
import type { ChildProcess } from 'node:child_process';

export interface Listening {
  /** The base URL of the banner; rejects, with the server's stderr, if it exits before listening. */
  base: Promise<string>;
  exited: Promise<number | null>;
  /** What the server wrote on stderr so far. */
  stderr(): string;
}

export function listening(child: ChildProcess): Listening {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let out = '';
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const base = new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/\S+\/v1)/.exec(out);
      if (m) resolve(m[1]!);
    });
    void exited.then((code) => reject(new Error(`server exited (${code}) before listening: ${err}`)));
  });
  return { base, exited, stderr: () => err };
}
