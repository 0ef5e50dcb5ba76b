// The chat's line editor (D-112): keys applied in the order they came however many arrive in one read,
// a bracketed paste inserted at the cursor as it is, and a screen that shows what Enter sends (a small
// VT100, test/support/screen.ts, reads what the editor writes). The real terminal is tmux's, in
// test/proof/chat-tmux.test.ts.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { main } from '../cli/main.ts';
import { LineEditor, screenPosition, type Key } from '../cli/line-editor.ts';
import { TerminalInput } from '../cli/terminal-input.ts';
import { APP, startTestServer, type TestServer } from './support/helpers.ts';
import { Capture, cliEnv, serverEnv } from './support/cli-helpers.ts';
import { Screen } from './support/screen.ts';

const LEFT = '\x1b[D';
const UP = '\x1b[A';
const DOWN = '\x1b[B';
const paste = (text: string) => `\x1b[200~${text}\x1b[201~`;

/** A terminal's stdin: raw mode is a no-op, bytes arrive by `read()`. */
function ttyInput() {
  return Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => undefined });
}

/** The editor on a screen `columns` wide; `read` delivers bytes as one read of the terminal does. */
function terminal(columns = 80, history: string[] = []) {
  const input = ttyInput();
  const screen = new Screen(columns);
  const term = new TerminalInput({ input, output: screen, history, prompt: '>>> ' });
  const lines: string[] = [];
  const events: string[] = [];
  term.on('line', (l: string) => lines.push(l));
  for (const e of ['interrupt', 'close']) term.on(e, () => events.push(e));
  return {
    input,
    screen,
    term,
    lines,
    events,
    /** One chunk, as one read() of the terminal returns it; the redraw it schedules has run on return. */
    read: async (bytes: string) => {
      input.emit('data', Buffer.from(bytes));
      await Promise.resolve();
    },
  };
}

describe('TerminalInput: what arrives in one read', () => {
  test('a burst typed in the middle of the line is inserted in order, and shown as sent', async () => {
    const t = terminal();
    t.term.prompt();
    await t.read('abcdef');
    await t.read(LEFT + LEFT);
    await t.read('XYZ');
    assert.equal(t.screen.text(), '>>> abcdXYZef');
    assert.deepEqual([t.screen.row, t.screen.col], [0, '>>> abcdXYZ'.length], 'the cursor stays after the burst');
    // Everything in one read: the same.
    await t.read(`\r12345${LEFT}${LEFT}${LEFT}abc\r`);
    assert.deepEqual(t.lines, ['abcdXYZef']);
    t.term.prompt();
    await t.read('');
    assert.deepEqual(t.lines, ['abcdXYZef', '12abc345']);
  });

  test('a bracketed paste in the middle of the line is inserted there whole; Enter sends what is shown', async () => {
    const t = terminal();
    t.term.prompt();
    await t.read(`abcdef${LEFT}${LEFT}`);
    // tmux sends CR for each line break; CR LF (a file from Windows) is one break too.
    await t.read(paste('one\rtwo\r\nthree'));
    assert.deepEqual(t.lines, [], 'the line breaks of a paste do not send it');
    assert.equal(t.screen.text(), '>>> abcdone\n... two\n... threeef');
    assert.deepEqual([t.screen.row, t.screen.col], [2, '... three'.length]);
    await t.read('!\r');
    assert.deepEqual(t.lines, ['abcdone\ntwo\nthree!ef']);
  });

  test('a paste split across reads is still one insertion', async () => {
    const t = terminal();
    t.term.prompt();
    await t.read('\x1b[200~first');
    await t.read('\rsecond\x1b[201~');
    await t.read('\r');
    assert.deepEqual(t.lines, ['first\nsecond']);
  });

  test('on a narrow screen the text wraps, and an edit in an earlier row redraws it in place', async () => {
    const t = terminal(12);
    t.term.prompt();
    const text = 'the quick brown fox jumps';
    await t.read(text);
    await t.read(LEFT.repeat(10));
    await t.read('XX');
    const edited = 'the quick brownXX fox jumps';
    const rows = (s: string) => s.match(/.{1,12}/g)!.map((r) => r.trimEnd());
    assert.equal(t.screen.text(), rows(`>>> ${edited}`).join('\n'));
    const at = screenPosition(`>>> ${edited.slice(0, edited.length - 10)}`, 12);
    assert.deepEqual([t.screen.row, t.screen.col], [at.rows, at.cols]);

    // A text that ends in the last column: the cursor goes to the next row, where the next key lands.
    const u = terminal(12);
    u.term.prompt();
    await u.read('abcdefgh');
    assert.deepEqual([u.screen.row, u.screen.col], [1, 0]);
    await u.read('Z');
    assert.equal(u.screen.text(), '>>> abcdefgh\nZ');
  });

  test('Ctrl-C is told at once, also during a reply; keys typed during a reply wait for the next prompt', async () => {
    const t = terminal();
    t.term.prompt();
    await t.read('half typed');
    await t.read('\x03');
    assert.deepEqual(t.events, ['interrupt']);
    t.term.cancelLine();
    assert.equal(t.screen.text(), '>>> half typed^C\n>>>');
    assert.equal(t.term.line, '');

    await t.read('sent\r');
    assert.deepEqual(t.lines, ['sent']);
    assert.equal(t.term.prompting, false);
    // The reply runs: typed keys wait, Ctrl-C does not.
    await t.read('next\x03');
    assert.deepEqual(t.events, ['interrupt', 'interrupt']);
    await t.read('\r');
    assert.deepEqual(t.lines, ['sent'], 'nothing is sent before the prompt shows it');
    t.term.prompt();
    assert.deepEqual(t.lines, ['sent', 'next']);
    assert.match(t.screen.text(), /^>>> next$/m);

    t.term.prompt();
    await t.read('\x04');
    assert.deepEqual(t.events, ['interrupt', 'interrupt', 'close'], 'Ctrl-D on an empty line leaves');
  });

  test('Up and Down go through the history, and between the lines of a text of several', async () => {
    const t = terminal(80, ['newest', 'older']);
    t.term.prompt();
    await t.read(`draft${UP}`);
    assert.equal(t.term.line, 'newest');
    await t.read(UP + UP);
    assert.equal(t.term.line, 'older');
    await t.read(DOWN + DOWN);
    assert.equal(t.term.line, 'draft');
    await t.read(`\x15${paste('first line\rsecond')}${UP}X\r`);
    assert.deepEqual(t.lines, ['first Xline\nsecond']);
    assert.deepEqual(t.term.editor.history.slice(0, 2), ['first Xline\nsecond', 'newest']);
  });
});

describe('LineEditor', () => {
  /** Applies keys as `[sequence, key]` pairs, or characters typed. */
  const edit = (editor: LineEditor, ...keys: Array<string | Key>) => {
    for (const k of keys) {
      if (typeof k === 'string') for (const ch of k) editor.key(ch, { name: ch, sequence: ch });
      else editor.key(undefined, k);
    }
    return editor;
  };
  const ctrl = (name: string): Key => ({ name, ctrl: true });
  const meta = (name: string): Key => ({ name, meta: true });

  test('words, line starts and ends, as bash', () => {
    const e = edit(new LineEditor(), 'say hello, world', ctrl('w'));
    assert.equal(e.text, 'say hello, ');
    edit(e, ctrl('w'), ctrl('w'));
    assert.equal(e.text, 'say ');
    edit(e, 'there', meta('b'), 'over ', ctrl('e'), '!', ctrl('a'), ctrl('k'));
    assert.equal(e.text, '');
    edit(e, 'abc def', ctrl('left'), ctrl('u'));
    assert.equal(e.text, 'def');
    edit(e, ctrl('a'), meta('d'));
    assert.equal(e.text, '');
  });

  test('a character is a grapheme: Backspace and arrows step over an emoji with its modifier whole', () => {
    const e = edit(new LineEditor(), 'ok 👍🏽!', { name: 'left' }, { name: 'backspace' });
    assert.equal(e.text, 'ok !');
    edit(e, { name: 'left' }, { name: 'delete' });
    assert.equal(e.text, 'ok!');
  });

  test('control characters are keys or nothing, never text; Ctrl-D deletes, or leaves on an empty line', () => {
    const e = new LineEditor();
    assert.equal(e.key('\x1b', { name: 'escape' }), undefined);
    assert.equal(e.key(undefined, { name: 'f5' }), undefined);
    assert.equal(e.text, '');
    assert.equal(e.key(undefined, ctrl('d')), 'eof');
    edit(e, 'ab', { name: 'home' });
    assert.equal(e.key(undefined, ctrl('d')), undefined);
    assert.equal(e.text, 'b');
    assert.equal(e.key('\r', { name: 'return' }), 'submit');
    assert.equal(e.key(undefined, ctrl('c')), 'interrupt');
    assert.equal(e.key(undefined, ctrl('l')), 'clear-screen');
    // In a paste Enter is a line break; a paste whose end never comes is left by Ctrl-C.
    e.key(undefined, { name: 'paste-start' });
    assert.equal(e.key('\r', { name: 'return' }), undefined);
    assert.equal(e.text, '\nb');
    assert.equal(e.key(undefined, ctrl('c')), 'interrupt');
    assert.equal(e.key('\r', { name: 'return' }), 'submit');
  });

  test('the history keeps each text once, newest first, up to its size; an empty text is not kept', () => {
    const e = new LineEditor(['b', 'a'], 3);
    for (const t of ['c', 'a', '  ', 'd']) {
      edit(e, t);
      e.submit();
    }
    assert.deepEqual(e.history, ['d', 'a', 'c']);
  });
});

describe('screenPosition', () => {
  test('rows and columns as a terminal counts them: a full row, a line break, a wide character, a tab', () => {
    assert.deepEqual(screenPosition('abcd', 4), { rows: 1, cols: 0 });
    assert.deepEqual(screenPosition('abcd\nx', 4), { rows: 1, cols: 1 });
    assert.deepEqual(screenPosition('ab\n\nc', 4), { rows: 2, cols: 1 });
    // A wide character does not start in the last column.
    assert.deepEqual(screenPosition('abc漢', 4), { rows: 1, cols: 2 });
    assert.deepEqual(screenPosition('a\tb', 80), { rows: 0, cols: 9 });
    assert.deepEqual(screenPosition('e\u0301', 80), { rows: 0, cols: 1 }, 'a combining accent takes no column');
    assert.deepEqual(screenPosition('long line', Number.POSITIVE_INFINITY), { rows: 0, cols: 9 });
  });
});

describe('parley chat at a terminal (in-process)', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  test('a burst typed mid-line and a paste mid-line reach the server as the screen shows them', async () => {
    const stdin = ttyInput();
    const screen = Object.assign(new Screen(100), { isTTY: true });
    const stderr = new Capture();
    screenNow = () => screen.text();
    const run = main(['chat'], { env: cliEnv(serverEnv(s.baseUrl)), stdin, stdout: screen, stderr, signals: new EventEmitter() });
    const id = await until(() => /conversation (conv_\w+)/.exec(stderr.text)?.[1], 'the conversation');
    await until(() => screen.text().endsWith('>>>'), 'the prompt');
    const read = (bytes: string) => stdin.emit('data', Buffer.from(bytes));
    read(`abcdef${LEFT}${LEFT}`);
    read('XYZ');
    read('\r');
    await until(async () => (await userMessages(s, id)).length === 1, 'the first message');
    await until(() => screen.text().endsWith('>>>'), 'the prompt after the reply');
    read(`hello world${LEFT}${LEFT}${LEFT}${LEFT}${LEFT}`);
    read(paste('one\rtwo '));
    await until(() => screen.text().endsWith('>>> hello one\n... two world'), 'the paste shown in place');
    read('\r');
    await until(async () => (await userMessages(s, id)).length === 2, 'the second message');
    assert.deepEqual(await userMessages(s, id), ['abcdXYZef', 'hello one\ntwo world']);
    read('\x04');
    assert.equal(await run, 0);
  });
});

async function userMessages(s: TestServer, id: string): Promise<string[]> {
  const items = (await s.call('GET', `/apps/${APP}/conversations/${id}`)).body.items as Array<{
    type: string;
    role?: string;
    content?: Array<{ text?: string }>;
  }>;
  return items.filter((i) => i.type === 'message' && i.role === 'user').map((i) => (i.content ?? []).map((p) => p.text).join(''));
}

/** What the screen of the running chat shows, for a timeout's message. */
let screenNow: (() => string) | undefined;

/** Polls `check` until it gives a value (or true), for at most 30 s. */
async function until<T>(check: () => T | Promise<T>, what: string): Promise<Exclude<T, false | undefined>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v as Exclude<T, false | undefined>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${screenNow ? `; the screen:\n${screenNow()}` : ''}`);
    await delay(20);
  }
}
