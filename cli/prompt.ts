// Questions asked on the terminal (`parley login`, `conversations delete`).
import readline from 'node:readline';
import { Writable } from 'node:stream';
import { UsageError } from './io.ts';

/**
 * Questions on stderr, answers from stdin: on a terminal with line editing (the key's keystrokes not
 * echoed), from a pipe one line per answer.
 */
export class Prompter {
  #muted = false;
  readonly #rl: readline.Interface;
  readonly #lines: AsyncIterator<string>;
  constructor(
    stdin: NodeJS.ReadableStream & { isTTY?: boolean },
    readonly stderr: NodeJS.WritableStream & { isTTY?: boolean },
  ) {
    const terminal = Boolean(stdin.isTTY && stderr.isTTY);
    // What readline echoes passes through here, and is dropped while a secret is typed.
    const echo = new Writable({
      write: (chunk, _enc, done) => {
        if (!this.#muted) stderr.write(chunk);
        done();
      },
    });
    this.#rl = readline.createInterface({ input: stdin, output: terminal ? echo : undefined, terminal });
    this.#lines = this.#rl[Symbol.asyncIterator]();
  }

  async ask(question: string, { secret = false } = {}): Promise<string> {
    this.stderr.write(question);
    this.#muted = secret;
    try {
      const next = await this.#lines.next();
      if (next.done) throw new UsageError('the input ended before every answer was given');
      return next.value.trim();
    } finally {
      if (secret) this.stderr.write('\n');
      this.#muted = false;
    }
  }

  close(): void {
    this.#rl.close();
  }
}

/** D-64: whether a question can be asked: a person at a terminal on both ends, never a script. */
export function canAsk(io: { stdin: { isTTY?: boolean }; stderr: { isTTY?: boolean } }): boolean {
  return Boolean(io.stdin.isTTY && io.stderr.isTTY);
}
