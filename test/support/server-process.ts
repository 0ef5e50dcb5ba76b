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

/**
 * A streamed send of a long reply on app_slow (`base`: a live server's /v1), read until two text
 * deltas are in: the reply is certainly under way, its events on disk up to there. Its response's id
 * and the stream, left open for a kill.
 */
export async function replyUnderWay(base: string, headers: Record<string, string>, conv: string) {
  const res = await fetch(`${base}/apps/app_slow/conversations/${conv}`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ message: { content: 'Tell me a long story about the sea' } }),
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let seen = '';
  while ((seen.match(/output_text\.delta/g) ?? []).length < 2) {
    const { done, value } = await reader.read();
    // A stream that ends first would otherwise be read again for ever: fail with what it said.
    if (done) throw new Error(`the reply ended before two text deltas (${res.status}): ${seen.slice(0, 500)}`);
    seen += decoder.decode(value, { stream: true });
  }
  return { id: res.headers.get('parley-response-id')!, reader };
}
