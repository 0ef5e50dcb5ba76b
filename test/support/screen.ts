// A small terminal screen for the line editor's tests: what a VT100 shows after the bytes the chat
// writes (printable text with its wrap at the last column, CR, LF as CR LF, and the CSI sequences the editor
// uses: cursor up/down/forward/back, to a column, home, erase below or to the end of the row).
// Characters are one column each; wide ones are the tmux proof's business.
import { Writable } from 'node:stream';

export class Screen extends Writable {
  rows: string[][] = [[]];
  row = 0;
  col = 0;
  /** After a character in the last column the cursor waits there; the next character wraps. */
  #pendingWrap = false;
  #rest = '';

  constructor(readonly columns: number) {
    super({ decodeStrings: false });
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    this.feed(chunk.toString());
    done();
  }

  /** The rows as text, without trailing spaces or empty rows at the end. */
  text(): string {
    const lines = this.rows.map((r) =>
      Array.from(r, (c) => c ?? ' ')
        .join('')
        .trimEnd(),
    );
    while (lines.length > 0 && lines.at(-1) === '') lines.pop();
    return lines.join('\n');
  }

  feed(data: string): void {
    const input = this.#rest + data;
    this.#rest = '';
    let i = 0;
    while (i < input.length) {
      const ch = input[i]!;
      if (ch === '\x1b') {
        const m = /^\[(\??)([0-9;]*)([A-Za-z~])/.exec(input.slice(i + 1));
        if (!m) {
          // An escape sequence cut between two writes.
          this.#rest = input.slice(i);
          return;
        }
        if (m[1] === '') this.#csi(m[3]!, m[2] === '' ? undefined : Number(m[2]));
        i += 1 + m[0].length;
        continue;
      }
      // A terminal's output is cooked (ONLCR) also in raw mode: LF goes to the start of the next row.
      if (ch === '\r' || ch === '\n') {
        this.col = 0;
        this.#pendingWrap = false;
        if (ch === '\n') this.#down();
      } else this.#put(ch);
      i++;
    }
  }

  #put(ch: string): void {
    if (this.#pendingWrap) {
      this.#pendingWrap = false;
      this.col = 0;
      this.#down();
    }
    this.#cells()[this.col] = ch;
    if (this.col === this.columns - 1) this.#pendingWrap = true;
    else this.col++;
  }

  #down(): void {
    this.row++;
    while (this.rows.length <= this.row) this.rows.push([]);
  }

  #cells(): string[] {
    return this.rows[this.row]!;
  }

  #csi(final: string, n: number | undefined): void {
    this.#pendingWrap = false;
    const count = n ?? 1;
    switch (final) {
      case 'A':
        this.row = Math.max(0, this.row - count);
        break;
      case 'B':
        this.row += count;
        while (this.rows.length <= this.row) this.rows.push([]);
        break;
      case 'C':
        this.col = Math.min(this.columns - 1, this.col + count);
        break;
      case 'D':
        this.col = Math.max(0, this.col - count);
        break;
      case 'G':
        this.col = Math.min(this.columns - 1, count - 1);
        break;
      case 'H':
        this.row = 0;
        this.col = 0;
        break;
      case 'J':
        // Erase from the cursor to the end of the screen.
        this.#cells().length = Math.min(this.#cells().length, this.col);
        this.rows.length = this.row + 1;
        break;
      case 'K':
        this.#cells().length = Math.min(this.#cells().length, this.col);
        break;
    }
  }
}
