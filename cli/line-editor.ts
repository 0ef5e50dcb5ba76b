// The chat's line editor (D-112), without a terminal: the text being typed, the cursor, the history, and
// what each key does to them; and where text lands on a screen of a given width. Keys are Node's
// keypress events, handled one at a time in the order they came, however many arrive in one chunk;
// a bracketed paste is inserted at the cursor as it is, line breaks included. The terminal side is
// ./terminal-input.ts.

/** A keypress as `readline.emitKeypressEvents` reports it. */
export interface Key {
  sequence?: string;
  name?: string;
  ctrl?: boolean;
  meta?: boolean;
  shift?: boolean;
}

/** What a key asks of the caller beyond editing the text. */
export type KeyOutcome = 'submit' | 'eof' | 'interrupt' | 'clear-screen' | undefined;

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
/** A grapheme longer than this many UTF-16 units is rare enough to be stepped over in pieces. */
const GRAPHEME_WINDOW = 64;

/** The start of the character (grapheme) before index `i`. */
function previousBoundary(text: string, i: number): number {
  if (i <= 0) return 0;
  const from = Math.max(0, i - GRAPHEME_WINDOW);
  let last = from;
  for (const { index } of segmenter.segment(text.slice(from, i))) last = from + index;
  return last;
}

/** The end of the character (grapheme) after index `i`. */
function nextBoundary(text: string, i: number): number {
  if (i >= text.length) return text.length;
  const first = segmenter
    .segment(text.slice(i, i + GRAPHEME_WINDOW))
    [Symbol.iterator]()
    .next().value;
  return i + (first?.segment.length ?? 1);
}

const WORD = /[\p{L}\p{N}_]/u;
const SPACE = /\s/;
const kind = (ch: string) => (SPACE.test(ch) ? 0 : WORD.test(ch) ? 1 : 2);

/** The start of the word before `i`: spaces, then one run of word characters or of punctuation (as readline). */
function wordStart(text: string, i: number): number {
  while (i > 0 && kind(text[i - 1]!) === 0) i--;
  const k = i > 0 ? kind(text[i - 1]!) : 0;
  while (i > 0 && kind(text[i - 1]!) === k && k !== 0) i--;
  return i;
}

/** The end of the word after `i`. */
function wordEnd(text: string, i: number): number {
  while (i < text.length && kind(text[i]!) === 0) i++;
  const k = i < text.length ? kind(text[i]!) : 0;
  while (i < text.length && kind(text[i]!) === k && k !== 0) i++;
  return i;
}

/** Whether `s` is text to insert: no control character (those are keys, or nothing). */
const PRINTABLE = /^[^\p{Cc}]+$/u;

export class LineEditor {
  text = '';
  /** An index into `text`, always between two characters. */
  cursor = 0;
  /** Newest first. */
  readonly history: string[];
  #historyIndex = -1;
  /** The text being typed before Up went into the history. */
  #draft = '';
  #pasting = false;
  /** In a paste, CR LF is one line break. */
  #afterCr = false;

  constructor(
    history: string[] = [],
    readonly historySize = 1000,
  ) {
    this.history = history.slice(0, historySize);
  }

  /** Applies one key; returns what the caller must do, if anything. */
  key(s: string | undefined, key: Key = {}): KeyOutcome {
    const name = key.name;
    if (name === 'paste-start' || name === 'paste-end') {
      this.#pasting = name === 'paste-start';
      this.#afterCr = false;
      return undefined;
    }
    if (this.#pasting) return this.#pasted(s, key);
    if (key.ctrl && !key.meta) return this.#control(name);
    if (key.meta) return this.#meta(name);
    switch (name) {
      case 'return':
      case 'enter':
        return 'submit';
      case 'backspace':
        return this.#deleteTo(previousBoundary(this.text, this.cursor));
      case 'delete':
        return this.#deleteTo(nextBoundary(this.text, this.cursor));
      case 'left':
        return this.#moveTo(previousBoundary(this.text, this.cursor));
      case 'right':
        return this.#moveTo(nextBoundary(this.text, this.cursor));
      case 'home':
        return this.#moveTo(this.#lineStart());
      case 'end':
        return this.#moveTo(this.#lineEnd());
      case 'up':
        return this.#vertical(-1);
      case 'down':
        return this.#vertical(1);
      case 'tab':
        return this.insert('\t');
    }
    if (typeof s === 'string' && PRINTABLE.test(s)) this.insert(s);
    return undefined;
  }

  /** Ctrl-<key> (Ctrl-Left and Ctrl-Right move by words); another is ignored. */
  #control(name: string | undefined): KeyOutcome {
    switch (name) {
      case 'c':
        return 'interrupt';
      case 'd':
        if (this.text === '') return 'eof';
        return this.#deleteTo(nextBoundary(this.text, this.cursor));
      case 'a':
        return this.#moveTo(this.#lineStart());
      case 'e':
        return this.#moveTo(this.#lineEnd());
      case 'b':
        return this.#moveTo(previousBoundary(this.text, this.cursor));
      case 'f':
        return this.#moveTo(nextBoundary(this.text, this.cursor));
      case 'u':
        return this.#deleteTo(this.#lineStart());
      case 'k':
        return this.#deleteTo(this.#lineEnd());
      case 'w':
      case 'backspace':
        return this.#deleteTo(wordStart(this.text, this.cursor));
      case 'left':
        return this.#moveTo(wordStart(this.text, this.cursor));
      case 'right':
        return this.#moveTo(wordEnd(this.text, this.cursor));
      case 'p':
        return this.#vertical(-1);
      case 'n':
        return this.#vertical(1);
      case 'l':
        return 'clear-screen';
      case 'h':
        return this.#deleteTo(previousBoundary(this.text, this.cursor));
      default:
        return undefined;
    }
  }

  /** Alt-<key> (or Esc then the key): words. */
  #meta(name: string | undefined): KeyOutcome {
    switch (name) {
      case 'b':
      case 'left':
        return this.#moveTo(wordStart(this.text, this.cursor));
      case 'f':
      case 'right':
        return this.#moveTo(wordEnd(this.text, this.cursor));
      case 'backspace':
        return this.#deleteTo(wordStart(this.text, this.cursor));
      case 'd':
        return this.#deleteTo(wordEnd(this.text, this.cursor));
      default:
        return undefined;
    }
  }

  /**
   * A key inside a bracketed paste: its text as it is, Enter a line break; no key edits or sends. Only
   * Ctrl-C still acts (and ends the paste), so that a paste whose end never came cannot hold the line.
   */
  #pasted(s: string | undefined, key: Key): KeyOutcome {
    if (key.ctrl && key.name === 'c') {
      this.#pasting = false;
      return 'interrupt';
    }
    const cr = key.name === 'return';
    if (cr || key.name === 'enter') {
      // CR LF (a file pasted from Windows) is one break; tmux and most terminals send CR alone.
      if (!(key.name === 'enter' && this.#afterCr)) this.insert('\n');
    } else if (key.name === 'tab') this.insert('\t');
    else if (typeof s === 'string' && !key.ctrl && !key.meta && PRINTABLE.test(s)) this.insert(s);
    this.#afterCr = cr;
    return undefined;
  }

  insert(s: string): undefined {
    this.text = this.text.slice(0, this.cursor) + s + this.text.slice(this.cursor);
    this.cursor += s.length;
    return undefined;
  }

  #moveTo(i: number): undefined {
    this.cursor = i;
    return undefined;
  }

  /** Deletes between the cursor and `i` (either side of it). */
  #deleteTo(i: number): undefined {
    const [from, to] = i < this.cursor ? [i, this.cursor] : [this.cursor, i];
    this.text = this.text.slice(0, from) + this.text.slice(to);
    this.cursor = from;
    return undefined;
  }

  #lineStart(): number {
    return this.text.lastIndexOf('\n', this.cursor - 1) + 1;
  }

  #lineEnd(): number {
    const end = this.text.indexOf('\n', this.cursor);
    return end === -1 ? this.text.length : end;
  }

  /** Up and Down: to the line above or below in a text of several lines, else through the history. */
  #vertical(step: -1 | 1): undefined {
    const start = this.#lineStart();
    const end = this.#lineEnd();
    // The start of the line above or below, when there is one.
    let target: number | undefined;
    if (step < 0 && start > 0) target = start === 1 ? 0 : this.text.lastIndexOf('\n', start - 2) + 1;
    if (step > 0 && end < this.text.length) target = end + 1;
    if (target === undefined) return this.#recall(this.#historyIndex - step);
    const next = this.text.indexOf('\n', target);
    const targetEnd = next === -1 ? this.text.length : next;
    const i = Math.min(target + (this.cursor - start), targetEnd);
    // On a character's boundary, not inside it.
    this.cursor = i === targetEnd ? i : previousBoundary(this.text, nextBoundary(this.text, i));
    return undefined;
  }

  #recall(index: number): undefined {
    if (index < -1 || index >= this.history.length || index === this.#historyIndex) return undefined;
    if (this.#historyIndex === -1) this.#draft = this.text;
    this.#historyIndex = index;
    this.text = index === -1 ? this.#draft : this.history[index]!;
    this.cursor = this.text.length;
    return undefined;
  }

  /** The text sent by Enter: kept in the history (once, newest first), and the editor emptied. */
  submit(): string {
    const text = this.text;
    if (text.trim() !== '') {
      const seen = this.history.indexOf(text);
      if (seen !== -1) this.history.splice(seen, 1);
      this.history.unshift(text);
      this.history.length = Math.min(this.history.length, this.historySize);
    }
    this.clear();
    return text;
  }

  /** Empties the text (Ctrl-C), leaving the history. */
  clear(): void {
    this.text = '';
    this.cursor = 0;
    this.#historyIndex = -1;
    this.#draft = '';
    this.#pasting = false;
  }
}

// ---------------------------------------------------------------------------------------------
// Where text lands on the screen
// ---------------------------------------------------------------------------------------------

const ZERO_WIDTH = /^[\p{Mn}\p{Me}\p{Cf}]$/u;
const WIDE_PRESENTATION = /^\p{Emoji_Presentation}$/u;

/** Columns a character takes on a terminal: 0 for combining marks, 2 for East Asian wide ones and emoji. */
export function charWidth(ch: string): number {
  const code = ch.codePointAt(0)!;
  if (ZERO_WIDTH.test(ch)) return 0;
  if (WIDE_PRESENTATION.test(ch)) return 2;
  const wide =
    code >= 0x1100 &&
    (code <= 0x115f ||
      code === 0x2329 ||
      code === 0x232a ||
      (code >= 0x2e80 && code <= 0x3247 && code !== 0x303f) ||
      (code >= 0x3250 && code <= 0x4dbf) ||
      (code >= 0x4e00 && code <= 0xa4c6) ||
      (code >= 0xa960 && code <= 0xa97c) ||
      (code >= 0xac00 && code <= 0xd7a3) ||
      (code >= 0xf900 && code <= 0xfaff) ||
      (code >= 0xfe10 && code <= 0xfe19) ||
      (code >= 0xfe30 && code <= 0xfe6b) ||
      (code >= 0xff01 && code <= 0xff60) ||
      (code >= 0xffe0 && code <= 0xffe6) ||
      (code >= 0x1b000 && code <= 0x1b001) ||
      (code >= 0x1f200 && code <= 0x1f251) ||
      (code >= 0x1f300 && code <= 0x1f64f) ||
      (code >= 0x20000 && code <= 0x3fffd));
  return wide ? 2 : 1;
}

const TAB_SIZE = 8;

/** Rows below the first, and the column, where the terminal's cursor stands after writing `shown`. */
export interface ScreenPosition {
  rows: number;
  cols: number;
}

/**
 * Where writing `shown` (no escape sequences; `\n` moves to the next row) from column 0 leaves the
 * cursor on a screen `columns` wide. A row filled to its last column counts as the start of the next
 * one, as readline counts it (the writer then makes the terminal go there).
 */
export function screenPosition(shown: string, columns: number): ScreenPosition {
  let rows = 0;
  let offset = 0;
  for (const ch of shown) {
    if (ch === '\n') {
      rows += Math.ceil(offset / columns) || 1;
      offset = 0;
      continue;
    }
    if (ch === '\t') {
      offset += TAB_SIZE - (offset % TAB_SIZE);
      continue;
    }
    const width = charWidth(ch);
    // A wide character does not start in the last column: it goes to the next row whole.
    if (width === 2 && (offset + 1) % columns === 0) offset++;
    offset += width;
  }
  const cols = offset % columns;
  return { rows: rows + (offset - cols) / columns, cols };
}

/** The text as shown after its prompt: each line after the first after `continuation`. */
export function shownText(prompt: string, continuation: string, text: string): string {
  return prompt + text.replaceAll('\n', `\n${continuation}`);
}
