// `parley send`, `complete` and `chat` against a real server (main() in-process): live streams (§6, D-16),
// --json exactness, stdin, failed responses (D-17). test/proof/chat-sigint.test.ts: Ctrl-C cancelling a
// slow reply through the cancel endpoint (D-33), in a real process.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { ReferenceResponse } from '../src/contract/index.ts';
import { APP, KEY, startTestServer } from './support/helpers.ts';
import { runCli, serverEnv, startCli, waitFor } from './support/cli-helpers.ts';

const s = await startTestServer();
after(() => s.close());
const env = serverEnv(s.baseUrl);
const outputs: string[] = [];
async function run(args: string[], extra: { env?: Record<string, string>; input?: string } = {}) {
  const r = await runCli(args, { env: { ...env, ...extra.env }, input: extra.input });
  outputs.push(r.stdout, r.stderr);
  return r;
}

async function conversation(app = APP): Promise<string> {
  const r = await s.call('POST', `/apps/${app}/conversations`, {});
  assert.equal(r.status, 200);
  return r.body.id;
}

/** The fixtures' testing apps (agent slice): a slow stream, one that fails mid-stream. */
const SLOW = 'app_slow';
const FAULTY = 'app_faulty';

describe('send', { concurrency: 4 }, () => {
  test('--no-stream: the reply on stdout, calls on stderr, final status; --json is the response exactly', async () => {
    const id = await conversation();
    const r = await run(['send', id, 'How do API keys work?', '--no-stream']);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.trim().length > 0);
    assert.match(r.stderr, /^\[completed resp_\w+\]$/m);

    const j = await run(['send', id, 'And rate limits?', '--no-stream', '--json']);
    assert.equal(j.code, 0, j.stderr);
    assert.equal(j.stdout.trim().split('\n').length, 1);
    const response = ReferenceResponse.parse(JSON.parse(j.stdout));
    // The history keeps each output item of the response (D-14): the CLI printed the API's answer.
    const items = (await s.call('GET', `/apps/${APP}/conversations/${id}`)).body.items as Array<Record<string, unknown>>;
    const mine = items
      .filter((i) => i.response_id === response.id && i.role !== 'user')
      .map(({ id: _i, created_at: _c, response_id: _r, ...rest }) => rest);
    assert.deepEqual(mine, response.output);
    const text = response.output.flatMap((o) => (o.type === 'message' ? (o.content ?? []).map((p) => p.text ?? '') : [])).join('');
    assert.ok(text.length > 0);
  });

  test('the text comes from stdin when absent or -', async () => {
    const id = await conversation();
    const absent = await run(['send', id, '--no-stream', '--json'], { input: 'first from stdin\n' });
    const dash = await run(['send', id, '-', '--no-stream', '--json'], { input: 'second from stdin' });
    assert.equal(absent.code, 0, absent.stderr);
    assert.equal(dash.code, 0, dash.stderr);
    const items = (await s.call('GET', `/apps/${APP}/conversations/${id}`)).body.items as Array<{
      role?: string;
      content?: Array<{ text: string }>;
    }>;
    const sent = items
      .filter((i) => i.role === 'user')
      .map((i) => i.content![0]!.text)
      .sort();
    assert.deepEqual(sent, ['first from stdin', 'second from stdin']);
  });

  test('--stream renders the text while it arrives, before the command ends', async () => {
    const id = await conversation(SLOW);
    // A greeting: a short reply, yet seven chunks 150 ms apart.
    const cli = startCli(['send', id, 'Hello', '--stream', '--app', SLOW], { env });
    let ended = false;
    void cli.done.then(() => (ended = true));
    const early = await waitFor(cli.stdout, /\S/);
    // Text is on stdout while the command still runs: the slow app's reply has many chunks to go.
    assert.equal(ended, false);
    const { code, stdout, stderr } = await cli.done;
    outputs.push(stdout, stderr);
    assert.equal(code, 0, stderr);
    assert.ok(stdout.startsWith(early) && stdout.length > early.length, `${JSON.stringify(early)} then ${JSON.stringify(stdout)}`);
    assert.match(stderr, /^\[completed resp_\w+\]$/m);
  });

  test('--stream --json: NDJSON, one event payload per line, in order (D-16); app default applies without a flag', async () => {
    const id = await conversation('app_stream');
    const r = await run(['send', id, 'hello', '--json', '--app', 'app_stream']);
    assert.equal(r.code, 0, r.stderr);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(events[0].type, 'response.created');
    assert.equal(events.at(-1).type, 'response.completed');
    assert.deepEqual(
      events.map((e) => e.sequence_number),
      events.map((_, i) => i),
    );
    const deltas = events
      .filter((e) => e.type === 'response.output_text.delta')
      .map((e) => e.delta)
      .join('');
    const done = events
      .filter((e) => e.type === 'response.output_text.done')
      .map((e) => e.text)
      .join('');
    assert.equal(deltas, done);
  });

  test('a function call is one line on stderr, streamed or not (D-21: knowledge_search)', async () => {
    const id = await conversation();
    for (const mode of ['--stream', '--no-stream']) {
      const r = await run(['send', id, 'How do API keys work?', mode]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /^→ knowledge_search\(\{"query":.+\}\)$/m, mode);
      assert.doesNotMatch(r.stdout, /knowledge_search/);
    }
  });

  test('--timeout below a second is honoured: chunks 150 ms apart and --timeout 0.1 end with exit 3, naming the URL', async () => {
    const id = await conversation(SLOW);
    const r = await run(['send', id, 'Tell me about streaming responses', '--stream', '--app', SLOW, '--timeout', '0.1']);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, new RegExp(`^error: timeout: .+ 0\\.1s \\(${s.baseUrl}/apps/${SLOW}/conversations/${id}\\)$`, 'm'));
  });

  test('data_spec patches and the final status go to stderr, one line each (generative UI)', async () => {
    const id = await conversation('app_genui');
    const r = await run(['send', id, 'I want to contact sales', '--stream', '--app', 'app_genui']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^◆ form "Contact us" /m);
    assert.match(r.stderr, /^ {2}• Email \(email; required\)$/m);
    assert.doesNotMatch(r.stdout, /◆|•/);
  });

  test('a response that fails mid-stream exits 1 with its error (D-17)', async () => {
    const id = await conversation(FAULTY);
    const r = await run(['send', id, 'Tell me a long story about billing', '--app', FAULTY]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: response resp_\w+ failed: \w+: .+/m);
  });

  test('a failed response in --json mode: the JSON on stdout, and the reason on stderr too (D-17)', async () => {
    const id = await conversation('app_broken');
    const r = await run(['send', id, 'hello', '--app', 'app_broken', '--no-stream', '--json']);
    assert.equal(r.code, 1);
    assert.equal(JSON.parse(r.stdout).status, 'failed');
    assert.match(r.stderr, /^error: response resp_\w+ failed: \w+: .+ \(code: scripted_fault\)$/m);
  });

  test('an unknown conversation: exit 1, not_found (404)', async () => {
    const r = await run(['send', 'conv_doesnotexist', 'hello']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: not_found \(404\): /m);
  });
});

describe('complete', { concurrency: 4 }, () => {
  test('a prompt argument gives the text; --json is the completion exactly', async () => {
    const r = await run(['complete', 'Write a welcome line', '--fast', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const c = JSON.parse(r.stdout);
    assert.equal(c.object, 'completion');
    assert.match(c.id, /^cmpl_/);
    const h = await run(['complete', 'Write a welcome line', '--no-knowledge-search']);
    assert.equal(h.code, 0, h.stderr);
    assert.ok(h.stdout.trim().length > 0);
    assert.match(h.stderr, /^\[completed cmpl_\w+\]$/m);
  });

  test('a failed completion is named a completion, with its reason, in text and --json modes (D-17)', async () => {
    for (const extra of [[], ['--json']]) {
      const r = await run(['complete', 'hello', '--app', 'app_broken', ...extra]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /^error: completion cmpl_\w+ failed: \w+: .+ \(code: scripted_fault\)$/m);
    }
  });

  test('the prompt from stdin, streamed (§6 rule 2)', async () => {
    const r = await run(['complete', '--stream', '--json', '--metadata', '{"audience":"developers"}'], {
      input: 'Summarise streaming in one sentence\n',
    });
    assert.equal(r.code, 0, r.stderr);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(events[0].object, 'completion');
    assert.equal(events.at(-1).type, 'response.completed');
    assert.ok(events.every((e) => !String(e.type).includes('function_call')));
  });
});

describe('chat', { concurrency: 2 }, () => {
  test('--title, --external-user-id and --metadata reach the conversation it creates', async () => {
    const user = `chat_user_${Date.now()}`;
    const r = await run(['chat', '--title', 'From chat', '--external-user-id', user, '--metadata', '{"plan":"pro"}'], { input: 'hello\n' });
    assert.equal(r.code, 0, r.stderr);
    const id = /conversation (conv_\w+)/.exec(r.stderr)?.[1];
    assert.ok(id, r.stderr);
    const c = (await s.call('GET', `/apps/${APP}/conversations/${id}`)).body;
    assert.deepEqual([c.title, c.external_user_id, c.metadata], ['From chat', user, { plan: 'pro' }]);
  });

  test('driven through piped stdin: creates a conversation, one reply per line, exits 0 at the end of input', async () => {
    const r = await run(['chat'], { input: 'hello\nhow do API keys work?\n' });
    assert.equal(r.code, 0, r.stderr);
    const id = /conversation (conv_\w+)/.exec(r.stderr)?.[1];
    assert.ok(id, r.stderr);
    assert.equal(r.stderr.match(/^\[completed resp_\w+\]$/gm)?.length, 2);
    const items = (await s.call('GET', `/apps/${APP}/conversations/${id}`)).body.items as Array<{ type: string; role?: string }>;
    assert.deepEqual(
      items.filter((i) => i.type === 'message').map((i) => i.role),
      ['user', 'assistant', 'user', 'assistant'],
    );
  });

  test('driven through piped stdin, a failed reply is reported and the session ends with exit 1 (D-17)', async () => {
    const r = await run(['chat', '--app', 'app_broken'], { input: 'hello\nhello again\n' });
    assert.equal(r.code, 1);
    assert.equal(r.stderr.match(/^error: response resp_\w+ failed: \w+: .+/gm)?.length, 2, r.stderr);
  });
});

test('no output of any run above shows the key', () => {
  assert.ok(outputs.length >= 20);
  for (const o of outputs) assert.ok(!o.includes(KEY), `the key appeared in: ${o}`);
  // Parley's own answers match the interface: the CLI never has to warn about them.
  for (const o of outputs) assert.ok(!/^warning: /m.test(o), `a warning about Parley's answer: ${o}`);
});
