// `parley chat` in a real terminal (D-64): tmux runs it in a 100×30 pane, keys are typed with send-keys,
// the screen is read with capture-pane. Line editing, Ctrl-C on a half-typed line, """ blocks, a pasted
// block as one message, slash commands, replies wrapped at word boundaries, no status line, Ctrl-D, and
// the history kept across sessions; keys that arrive together and a paste, in the middle of a line (D-112);
// and parley login's key, typed but never shown. Without tmux it fails with the reason (test/support/system.ts).
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { APP, KEY, NO_COVERAGE, startTestServer, tempDir, type TestServer } from '../support/helpers.ts';
import { BIN } from '../support/cli-helpers.ts';
import { needSystemTool } from '../support/system.ts';

/** Without tmux the tests fail with the reason, unless PARLEY_TEST_SKIP_MISSING=1 (test/support/system.ts). */
const NO_TMUX = needSystemTool('tmux', ['-V'], 'tmux');

const SOCKET = `parley-chat-test-${process.pid}`;
let tmuxConf = '/dev/null';
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', SOCKET, '-f', tmuxConf, ...args], { encoding: 'utf8' });
/** Whether the pane's process has ended (the pane stays, remain-on-exit, so that its screen can be read). */
const dead = (target: string) => tmux('list-panes', '-t', target, '-F', '#{pane_dead}').trim() === '1';

let s: TestServer;
let configHome: string;
let script: string;
before(async () => {
  if (NO_TMUX) return;
  s = await startTestServer();
  configHome = await tempDir('parley-chat-config-');
  const dir = await tempDir('parley-chat-bin-');
  script = path.join(dir, 'chat.sh');
  tmuxConf = path.join(dir, 'tmux.conf');
  await fs.writeFile(tmuxConf, 'set -g remain-on-exit on\n');
  const env = {
    PARLEY_BASE_URL: s.baseUrl,
    PARLEY_API_KEY: KEY,
    PARLEY_APP_ID: APP,
    XDG_CONFIG_HOME: configHome,
    TERM: 'xterm-256color',
    ...NO_COVERAGE,
  };
  const exports = Object.entries(env)
    .map(([k, v]) => `export ${k}='${v}'`)
    .join('\n');
  await fs.writeFile(script, `#!/bin/sh\n${exports}\nexec "${process.execPath}" "${BIN}" chat "$@"\n`, { mode: 0o755 });
});
after(async () => {
  if (NO_TMUX) return;
  spawnSync('tmux', ['-L', SOCKET, 'kill-server']);
  await s.close();
});

/** The pane's text (capture-pane drops trailing spaces: a prompt reads `>>>`). */
function screen(target: string): string {
  return tmux('capture-pane', '-p', '-t', target);
}

/** Polls the pane until `re` matches, for at most 30 s (a slow shared machine), and returns the screen. */
async function until(target: string, re: RegExp | ((text: string) => boolean), what: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  let text = '';
  for (;;) {
    text = screen(target);
    if (typeof re === 'function' ? re(text) : re.test(text)) return text;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the screen:\n${text}`);
    await delay(50);
  }
}

const type = (target: string, text: string) => tmux('send-keys', '-t', target, '-l', text);
const key = (target: string, ...keys: string[]) => tmux('send-keys', '-t', target, ...keys);

async function userMessages(id: string): Promise<string[]> {
  const items = (await s.call('GET', `/apps/${APP}/conversations/${id}`)).body.items as Array<{
    type: string;
    role?: string;
    content?: Array<{ text?: string }>;
  }>;
  return items.filter((i) => i.type === 'message' && i.role === 'user').map((i) => (i.content ?? []).map((p) => p.text).join(''));
}
async function lastReply(id: string): Promise<string> {
  const items = (await s.call('GET', `/apps/${APP}/conversations/${id}`)).body.items as Array<{
    type: string;
    role?: string;
    content?: Array<{ text?: string }>;
  }>;
  const a = items.filter((i) => i.type === 'message' && i.role === 'assistant').at(-1);
  return (a?.content ?? []).map((p) => p.text).join('');
}

/** The number of complete replies in the conversation (each message ends with a new prompt). */
async function waitReplies(id: string, n: number, target: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const items = (await s.call('GET', `/apps/${APP}/conversations/${id}`)).body.items as Array<{ role?: string }>;
    if (items.filter((i) => i.role === 'assistant').length >= n) break;
    if (Date.now() > deadline) throw new Error(`no reply ${n}; the screen:\n${screen(target)}`);
    await delay(50);
  }
  // The reply is saved before its last event is printed: wait for the prompt that follows it.
  return until(target, (t) => t.trimEnd().split('\n').at(-1)!.trim() === '>>>', 'the prompt after a reply');
}

test('parley chat in a terminal: editing, Ctrl-C, """ blocks, a paste, slash commands, wrapping, Ctrl-D, history', {
  skip: NO_TMUX,
  timeout: 180_000,
}, async () => {
  const t = 'chat1';
  tmux('new-session', '-d', '-x', '100', '-y', '30', '-s', t, script);
  let text = await until(t, /^>>>/m, 'the first prompt');
  assert.match(text, /Type \/help for commands/);
  const id = /conversation (conv_\w+)/.exec(text)?.[1];
  assert.ok(id, text);

  // Ctrl-C on a half-typed line clears it (the text shows ^C), and the session goes on.
  type(t, 'this is not sent');
  await until(t, /this is not sent/, 'the typed text');
  key(t, 'C-c');
  await until(t, /this is not sent\^C\n>>>\s*$/m, 'a fresh prompt after ^C');
  // Line editing: move left, insert, jump to the end (one key at a time, as a person types).
  type(t, 'hello there');
  for (let i = 0; i < 6; i++) key(t, 'Left');
  type(t, ',');
  key(t, 'C-e');
  type(t, '!');
  key(t, 'Enter');
  text = await waitReplies(id, 1, t);
  assert.deepEqual(await userMessages(id), ['hello, there!']);
  assert.doesNotMatch(text, /\[completed/, 'no status line after a reply that went well');

  // A """ block is one message of several lines.
  type(t, '"""');
  key(t, 'Enter');
  await until(t, /^\.\.\.\s*$/m, 'the continuation prompt');
  type(t, 'first line');
  key(t, 'Enter');
  type(t, 'second line"""');
  key(t, 'Enter');
  await waitReplies(id, 2, t);
  assert.equal((await userMessages(id)).at(-1), 'first line\nsecond line');

  // A pasted block (bracketed paste) is one message, sent by Enter.
  tmux('set-buffer', '--', 'pasted one\npasted two');
  tmux('paste-buffer', '-p', '-t', t);
  await until(t, /pasted two/, 'the pasted text');
  key(t, 'Enter');
  await waitReplies(id, 3, t);
  assert.equal((await userMessages(id)).at(-1), 'pasted one\npasted two');

  // Slash commands: /help, and /json toggles raw events.
  type(t, '/help');
  key(t, 'Enter');
  await until(t, /^ {2}\/json +show the raw events/m, 'the help');
  type(t, '/json');
  key(t, 'Enter');
  await until(t, /raw events on/, '/json on');
  type(t, 'hi');
  key(t, 'Enter');
  await waitReplies(id, 4, t);
  await until(t, /^\{"type":"response\.completed"/m, 'a raw event line');
  type(t, '/json');
  key(t, 'Enter');
  await until(t, /raw events off/, '/json off');
  tmux('clear-history', '-t', t);
  key(t, 'C-l');

  // A long reply is wrapped at word boundaries: every word of it stands whole on one line of the screen.
  type(t, 'What can you do?');
  key(t, 'Enter');
  text = await waitReplies(id, 5, t);
  const reply = await lastReply(id);
  assert.ok(reply.length > 100, `the reply should need wrapping: ${reply}`);
  const lines = text.split('\n');
  for (const line of lines) assert.ok(line.length <= 100);
  const words = reply.split(/\s+/).filter((w) => w.length > 1);
  const shown = lines.join('\n');
  const visible = words.filter((w) => shown.includes(w.slice(0, 3)));
  for (const w of visible.slice(-20))
    assert.ok(
      lines.some((l) => l.includes(w)),
      `the word ${JSON.stringify(w)} was cut at the end of a line:\n${text}`,
    );

  // Ctrl-D leaves.
  key(t, 'C-d');
  await until(t, () => dead(t), 'the end of the session');

  // The history was kept: a new session recalls the last message with Up.
  const history = await fs.readFile(path.join(configHome, 'parley', 'chat_history'), 'utf8');
  assert.match(history, /What can you do\?\n$/);
  assert.equal((await fs.stat(path.join(configHome, 'parley', 'chat_history'))).mode & 0o777, 0o600);
  const t2 = 'chat2';
  tmux('new-session', '-d', '-x', '100', '-y', '30', '-s', t2, script, id);
  await until(t2, /^>>>/m, 'the prompt of the second session');
  key(t2, 'Up');
  await until(t2, /^>>> What can you do\?/m, 'the last message recalled');
  key(t2, 'C-u');
  type(t2, '/bye');
  key(t2, 'Enter');
  await until(t2, () => dead(t2), '/bye');
});

test('parley chat in a terminal: a burst of keys and a bracketed paste in the middle of a line are sent as shown (D-112)', {
  skip: NO_TMUX,
  timeout: 120_000,
}, async () => {
  const t = 'chat3';
  tmux('new-session', '-d', '-x', '100', '-y', '30', '-s', t, script);
  const text = await until(t, /^>>>/m, 'the first prompt');
  const id = /conversation (conv_\w+)/.exec(text)?.[1];
  assert.ok(id, text);

  // Three characters written to the terminal at once, with the cursor two characters from the end.
  type(t, 'abcdef');
  await until(t, /^>>> abcdef$/m, 'the typed text');
  key(t, 'Left', 'Left');
  type(t, 'XYZ');
  await until(t, /^>>> abcdXYZef$/m, 'the burst inserted in order');
  key(t, 'Enter');
  await waitReplies(id, 1, t);
  assert.deepEqual(await userMessages(id), ['abcdXYZef']);

  // A paste of two lines at the cursor: shown in place, on two rows, and sent as shown.
  type(t, 'hello world');
  await until(t, /^>>> hello world$/m, 'the typed text');
  for (let i = 0; i < 5; i++) key(t, 'Left');
  tmux('set-buffer', '--', 'one\ntwo ');
  tmux('paste-buffer', '-p', '-t', t);
  await until(t, /^>>> hello one\n\.\.\. two world$/m, 'the paste shown in place');
  key(t, 'Enter');
  await waitReplies(id, 2, t);
  assert.deepEqual(await userMessages(id), ['abcdXYZef', 'hello one\ntwo world']);
  key(t, 'C-d');
  await until(t, () => dead(t), 'the end of the session');
});

test('parley login at a terminal: the key is typed but never shown, and the profile is saved', {
  skip: NO_TMUX,
  timeout: 60_000,
}, async () => {
  const home = await tempDir('parley-login-config-');
  const dir = await tempDir('parley-login-bin-');
  const login = path.join(dir, 'login.sh');
  await fs.writeFile(
    login,
    `#!/bin/sh\nexport XDG_CONFIG_HOME='${home}' NODE_V8_COVERAGE=''\nexec "${process.execPath}" "${BIN}" login\n`,
    { mode: 0o755 },
  );
  const t = 'login';
  tmux('new-session', '-d', '-x', '100', '-y', '30', '-s', t, login);
  await until(t, /^Base URL \[/m, 'the first question');
  type(t, s.baseUrl);
  key(t, 'Enter');
  await until(t, /^API key .*not shown\): ?$/m, 'the key question');
  type(t, KEY);
  key(t, 'Enter');
  await until(t, /^Default app id:/m, 'the app question');
  type(t, APP);
  key(t, 'Enter');
  const text = await until(t, /logged in: profile default/, 'the profile saved');
  assert.ok(!text.includes(KEY) && !text.includes(KEY.slice(0, 12)), `the key was shown:\n${text}`);
  const saved = JSON.parse(await fs.readFile(path.join(home, 'parley', 'config.json'), 'utf8'));
  assert.equal(saved.profiles.default.api_key, KEY);
  await until(t, () => dead(t), 'the end of login');
});
