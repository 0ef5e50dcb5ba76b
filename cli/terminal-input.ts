// The chat's input at a terminal (D-112): stdin in raw mode, its bytes decoded into keys by Node's
// keypress decoder, each key applied in order to the LineEditor (./line-editor.ts), and the prompt with
// the text redrawn once per chunk of keys. What the screen shows is the editor's text, which is what
// Enter sends. Bracketed paste is on while it runs, so that a paste arrives marked as one.
import { EventEmitter } from 'node:events';
import readline from 'node:readline';
import { type Key, LineEditor, screenPosition, shownText } from './line-editor.ts';

/** xterm's bracketed paste: the terminal wraps a paste in ESC[200~ … ESC[201~ while it is on. */
const PASTE_ON = '\x1b[?2004h';
const PASTE_OFF = '\x1b[?2004l';

export interface TerminalInputOptions {
  input: NodeJS.ReadableStream & { setRawMode?(mode: boolean): unknown };
  output: NodeJS.WritableStream & { columns?: number };
  /** Newest first. */
  history?: string[];
  historySize?: number;
  prompt?: string;
  /** The prompt of the text's second and later lines. */
  continuation?: string;
}

/**
 * Events: `line` (the text Enter sent), `interrupt` (Ctrl-C, also while no prompt is shown),
 * `history` (the history after a line was added, newest first), `close` (Ctrl-D on an empty line,
 * the end of the input, or close()).
 */
export class TerminalInput extends EventEmitter {
  readonly editor: LineEditor;
  readonly #input: TerminalInputOptions['input'];
  readonly #output: TerminalInputOptions['output'];
  #prompt: string;
  readonly #continuation: string;
  /** Whether a prompt is shown, so that keys edit its text; otherwise they wait (typed ahead of a reply). */
  #active = false;
  #waiting: Array<[string | undefined, Key | undefined]> = [];
  /** Rows from the prompt's first row down to the cursor's. */
  #rows = 0;
  #redrawQueued = false;
  #closed = false;

  constructor(opts: TerminalInputOptions) {
    super();
    this.#input = opts.input;
    this.#output = opts.output;
    this.#prompt = opts.prompt ?? '> ';
    this.#continuation = opts.continuation ?? '... ';
    this.editor = new LineEditor(opts.history, opts.historySize);
    readline.emitKeypressEvents(this.#input);
    this.#input.setRawMode?.(true);
    this.#input.on('keypress', this.#onKey);
    this.#input.on('end', this.#onEnd);
    this.#output.on('resize', this.#onResize);
    this.#output.write(PASTE_ON);
    this.#input.resume();
  }

  /** The text being typed. */
  get line(): string {
    return this.editor.text;
  }

  get prompting(): boolean {
    return this.#active;
  }

  setPrompt(prompt: string): void {
    this.#prompt = prompt;
  }

  /** Shows the prompt on a new row, with any text typed ahead, and lets keys edit it. */
  prompt(): void {
    if (this.#closed) return;
    this.#active = true;
    this.#rows = 0;
    this.#redraw();
    while (this.#active && this.#waiting.length > 0) {
      const [s, key] = this.#waiting.shift()!;
      this.#apply(s, key);
    }
  }

  /** Ctrl-C on a half-typed text, as bash: it stays on the screen marked `^C`, a new prompt follows. */
  cancelLine(): void {
    this.editor.cursor = this.editor.text.length;
    this.#redraw();
    this.#output.write('^C\r\n');
    this.editor.clear();
    this.prompt();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#active = false;
    this.#input.off('keypress', this.#onKey);
    this.#input.off('end', this.#onEnd);
    this.#output.off('resize', this.#onResize);
    this.#input.setRawMode?.(false);
    this.#output.write(PASTE_OFF);
    this.#input.pause();
    this.emit('close');
  }

  readonly #onKey = (s: string | undefined, key: Key | undefined): void => {
    if (this.#closed) return;
    if (this.#active) this.#apply(s, key);
    // No prompt (a reply is on its way): Ctrl-C acts now, the rest is typed ahead for the next prompt.
    else if (key?.ctrl && key.name === 'c') this.emit('interrupt');
    else this.#waiting.push([s, key]);
  };

  readonly #onEnd = (): void => this.close();

  readonly #onResize = (): void => {
    if (this.#active) this.#redraw();
  };

  #apply(s: string | undefined, key: Key | undefined): void {
    switch (this.editor.key(s, key)) {
      case 'submit': {
        this.editor.cursor = this.editor.text.length;
        this.#redraw();
        this.#output.write('\r\n');
        this.#active = false;
        const added = this.editor.text.trim() !== '';
        const line = this.editor.submit();
        if (added) this.emit('history', this.editor.history);
        this.emit('line', line);
        return;
      }
      case 'eof':
        this.close();
        return;
      case 'interrupt':
        this.emit('interrupt');
        return;
      case 'clear-screen':
        this.#output.write('\x1b[H\x1b[J');
        this.#rows = 0;
        this.#redraw();
        return;
      default:
        // The keys of one chunk (a burst, a paste) are applied first, then drawn once.
        if (!this.#redrawQueued) {
          this.#redrawQueued = true;
          queueMicrotask(() => {
            this.#redrawQueued = false;
            if (this.#active) this.#redraw();
          });
        }
    }
  }

  /** Draws the prompt and the text from the prompt's first row, and puts the cursor where it edits. */
  #redraw(): void {
    const columns = this.#output.columns || Number.POSITIVE_INFINITY;
    const { text, cursor } = this.editor;
    const shown = shownText(this.#prompt, this.#continuation, text);
    const end = screenPosition(shown, columns);
    const at = screenPosition(shownText(this.#prompt, this.#continuation, text.slice(0, cursor)), columns);
    let out = this.#rows > 0 ? `\x1b[${this.#rows}A` : '';
    out += `\r\x1b[J${shown.replaceAll('\n', '\r\n')}`;
    // A text that ends in the last column leaves the terminal there: a space makes it go to the next row.
    if (end.cols === 0) out += ' ';
    out += `\x1b[${at.cols + 1}G`;
    if (end.rows > at.rows) out += `\x1b[${end.rows - at.rows}A`;
    this.#output.write(out);
    this.#rows = at.rows;
  }
}
