// `parley chat` through pipes (D-64): slash commands, """ blocks, and the word wrapping of replies. The
// terminal itself (line editing, Ctrl-C, pastes, history) is tested in tmux, test/proof/chat-tmux.test.ts,
// and its line editor on a small screen in test/cli-line-editor.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { WordWrapper } from '../cli/render.ts';
import { APP, startTestServer, type TestServer } from './support/helpers.ts';
import { runCli, serverEnv } from './support/cli-helpers.ts';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

async function userMessages(id: string): Promise<string[]> {
  const items = (await s.call('GET', `/apps/${APP}/conversations/${id}`)).body.items as Array<{
    type: string;
    role?: string;
    content?: Array<{ text?: string }>;
  }>;
  return items.filter((i) => i.type === 'message' && i.role === 'user').map((i) => (i.content ?? []).map((p) => p.text).join(''));
}

describe('parley chat, piped', () => {
  test('""" blocks are one message; /metadata, /json, /new, /help and /bye; an unknown command is not sent', async () => {
    const input = `${['"""', 'line one', 'line two"""', '/metadata {"plan":"pro"}', 'hello', '/metadata', '/json', 'hi', '/nope', '/help', '/new', 'in the new one', '/bye', 'never sent'].join('\n')}\n`;
    const r = await runCli(['chat'], { env: serverEnv(s.baseUrl), input });
    assert.equal(r.code, 2, 'the unknown command is the worst failure of the session');
    const ids = [...r.stderr.matchAll(/conversation (conv_\w+)/g)].map((m) => m[1]!);
    assert.equal(ids.length, 2, r.stderr);
    assert.deepEqual(await userMessages(ids[0]!), ['line one\nline two', 'hello', 'hi']);
    assert.deepEqual(await userMessages(ids[1]!), ['in the new one']);
    assert.deepEqual((await s.call('GET', `/apps/${APP}/conversations/${ids[0]}`)).body.metadata, { plan: 'pro' });
    assert.match(r.stderr, /^the next message sends metadata \{"plan":"pro"\}$/m);
    assert.match(r.stderr, /^metadata: \{"plan":"pro"\}$/m);
    assert.match(r.stderr, /^error: unknown command \/nope: \/help lists them$/m);
    assert.match(r.stderr, /^Commands:$/m);
    // After /json the reply is NDJSON on stdout.
    assert.match(r.stdout, /^\{"type":"response\.completed"/m);
    assert.doesNotMatch(r.stdout, /never sent/);
  });
});

describe('a failed reply names its request (D-63)', () => {
  test('the error line is followed by the x-request-id of the stream', async () => {
    const r = await runCli(['chat', '--app', 'app_broken'], { env: serverEnv(s.baseUrl), input: 'hello\n' });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: response resp_\w+ failed: .+\nrequest id: \S+$/m);
  });
});

describe('WordWrapper', () => {
  const wrap = (width: number, ...chunks: string[]) => {
    let text = '';
    const w = new WordWrapper(width, (s) => (text += s));
    for (const c of chunks) w.push(c);
    w.flush();
    return text;
  };
  test('breaks at word boundaries, also when words arrive in pieces', () => {
    assert.equal(wrap(10, 'the quick brown fox'), 'the quick\nbrown fox');
    assert.equal(wrap(10, 'the qu', 'ick bro', 'wn fox'), 'the quick\nbrown fox');
    assert.equal(wrap(10, 'a\nb c'), 'a\nb c');
    assert.equal(wrap(5, 'unbreakable word'), 'unbreakable\nword');
    assert.equal(wrap(80, 'héllo wörld'), 'héllo wörld');
  });
});
