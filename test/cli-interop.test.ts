// The `parley` CLI against *another* implementation of the interface: a loopback fake scripts what
// the reference server never sends (defaults left out, unknown item types, payloads without D-16's
// `type`, endless lists), and records the request bodies the CLI sends. main() in-process, and real
// processes where the reader leaves (`| head -1`).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tempDir } from './support/helpers.ts';
import { main } from '../cli/main.ts';
import { Capture, FAKE_KEY, inlineIo, runCli, sendJson, sseEvent, startFakeApi, type FakeApi } from './support/cli-helpers.ts';

let api: FakeApi;
before(async () => {
  api = await startFakeApi();
});
after(() => api.close());

const outputs: string[] = [];
async function run(args: string[], input?: string) {
  const r = await runCli(args, { env: api.env, input });
  outputs.push(r.stdout, r.stderr);
  return r;
}

/** §2.3: `object`, `output` and `status` left to their defaults. */
const DEFAULTS_ONLY = '{"id":"r1", "created_at":1, "conversation_id":"c1"}';
/** An item type the interface does not list, and a message without `role`. */
const ODD_ITEMS = JSON.stringify({
  id: 'r2',
  object: 'response',
  created_at: 1,
  conversation_id: 'c1',
  output: [
    { type: 'reasoning', summary: 'thinking it over' },
    { type: 'message', content: [{ type: 'text', text: 'Hello there' }] },
  ],
  status: 'completed',
});

// The runs share the fake's one handler: one at a time.
describe('answers the interface allows', { concurrency: false }, () => {
  test('a response relying on the §2.3 defaults: printed exactly with --json, rendered without, no warning', async () => {
    api.handle((_req, res) => sendJson(res, DEFAULTS_ONLY));
    const j = await run(['send', 'c1', 'hi', '--json']);
    assert.equal(j.code, 0, j.stderr);
    assert.equal(j.stdout, `${DEFAULTS_ONLY}\n`);
    assert.equal(j.stderr, '');
    const h = await run(['send', 'c1', 'hi']);
    assert.equal(h.code, 0, h.stderr);
    assert.equal(h.stderr, '[completed r1]\n');
  });

  test('D-74: a credits warning beside a usable answer is said once on stderr; stdout is the answer alone', async () => {
    const said = "credits exhausted for 2026-11 (balance -0.5 of 10 credits); the plan's limit is soft, so this reply runs";
    api.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'parley-credits-warning': said });
      res.end(DEFAULTS_ONLY);
    });
    const j = await run(['send', 'c1', 'hi', '--json']);
    assert.equal(j.code, 0, j.stderr);
    assert.equal(j.stdout, `${DEFAULTS_ONLY}\n`);
    assert.equal(j.stderr, `warning: ${said}\n`);
    const h = await run(['send', 'c1', 'hi']);
    assert.equal(h.stderr, `warning: ${said}\n[completed r1]\n`);
  });

  test('every request says what sent it: User-Agent parley-cli/<version> node/<version>', async () => {
    api.handle((_req, res) => sendJson(res, DEFAULTS_ONLY));
    const before = api.requests.length;
    assert.equal((await run(['send', 'c1', 'hi', '--json'])).code, 0);
    const version = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../package.json'), 'utf8')).version;
    assert.equal(api.requests[before]!.headers['user-agent'], `parley-cli/${version} node/${process.versions.node}`);
  });

  test('an unknown item type and a message without role: shown, with a warning on stderr, exit 0', async () => {
    api.handle((_req, res) => sendJson(res, ODD_ITEMS));
    const j = await run(['send', 'c1', 'hi', '--json']);
    assert.equal(j.code, 0, j.stderr);
    assert.equal(j.stdout, `${ODD_ITEMS}\n`);
    assert.match(
      j.stderr,
      new RegExp(`^warning: the answer of POST ${api.baseUrl}/apps/app_x/conversations/c1 does not match the interface: output\\.0`, 'm'),
    );
    const h = await run(['send', 'c1', 'hi']);
    assert.equal(h.code, 0, h.stderr);
    assert.equal(h.stdout, 'Hello there\n');
    assert.match(h.stderr, /^\[reasoning\] \{"type":"reasoning","summary":"thinking it over"\}$/m);
    assert.match(h.stderr, /^\[completed r2\]$/m);
  });

  test('conversations get without generated_title or items: shown, with a warning, exit 0', async () => {
    const body = '{"id":"c7","object":"conversation","created_at":1,"title":null}';
    api.handle((_req, res) => sendJson(res, body));
    const j = await run(['conversations', 'get', 'c7', '--json']);
    assert.equal(j.code, 0, j.stderr);
    assert.equal(j.stdout, `${body}\n`);
    assert.match(j.stderr, /^warning: .* does not match the interface: generated_title/m);
    const h = await run(['conversations', 'get', 'c7']);
    assert.equal(h.code, 0, h.stderr);
    assert.match(h.stdout, /^id:\s+c7$/m);
    assert.match(h.stdout, /\(no messages yet\)/);
  });

  test('an answer the CLI cannot use: --json still prints it, then invalid_response, exit 1', async () => {
    const body = '{"object":"response","output":"nothing"}';
    api.handle((_req, res) => sendJson(res, body));
    const j = await run(['send', 'c1', 'hi', '--json']);
    assert.equal(j.code, 1);
    assert.equal(j.stdout, `${body}\n`);
    assert.match(
      j.stderr,
      new RegExp(
        `^error: invalid_response: the server's answer is not usable: id: .* \\(${api.baseUrl}/apps/app_x/conversations/c1\\)$`,
        'm',
      ),
    );
    const h = await run(['send', 'c1', 'hi']);
    assert.equal(h.code, 1);
    assert.equal(h.stdout, '');
    assert.match(h.stderr, /^error: invalid_response: /m);
  });

  test('--json of complete, metrics and delete is the body byte for byte', async () => {
    const bodies: Record<string, string> = {
      'POST /apps/app_x/completions':
        '{ "id": "cmpl_1",  "object": "completion", "created_at": 1, "text": "h\\u00e9", "status": "completed", "z": {"b": 1, "a": 2} }',
      'GET /apps/app_x/metrics': '{"total_users":3,"total_conversations":1,  "total_messages":2}',
      'DELETE /apps/app_x/conversations/c1': '{"deleted":true,"object":"conversation","id":"c1"}',
    };
    api.handle((req, res) => sendJson(res, bodies[`${req.method} ${req.path}`] ?? '{}'));
    for (const [args, key] of [
      [['complete', 'hi', '--json'], 'POST /apps/app_x/completions'],
      [['metrics', '--json'], 'GET /apps/app_x/metrics'],
      [['conversations', 'delete', 'c1', '--json'], 'DELETE /apps/app_x/conversations/c1'],
    ] as const) {
      const r = await run([...args]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `${bodies[key]}\n`, key);
    }
  });
});

describe('streams from another implementation', { concurrency: false }, () => {
  test('NDJSON: a payload without `type` gets the event name as `type`, first; one with it is its bytes', async () => {
    const completed = '{"type":"response.completed","id":"r1","status":"completed","sequence_number":9}';
    api.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sseEvent('response.created', { id: 'r1', object: 'response', status: 'in_progress', conversation_id: 'c1' }));
      res.write(sseEvent('response.output_text.delta', { delta: 'Hi', output_index: 0, content_index: 0 }));
      res.write(sseEvent('response.vendor_progress', { percent: 50 }));
      res.end(sseEvent('response.completed', completed));
    });
    const r = await run(['send', 'c1', 'hi', '--stream', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.split('\n'), [
      '{"type":"response.created","id":"r1","object":"response","status":"in_progress","conversation_id":"c1"}',
      '{"type":"response.output_text.delta","delta":"Hi","output_index":0,"content_index":0}',
      '{"type":"response.vendor_progress","percent":50}',
      completed,
      '',
    ]);
    // §6 lists `type` among the delta's fields: its absence is worth a warning, once.
    assert.equal(r.stderr.match(/^warning: a response\.output_text\.delta event .* does not match the interface: type: /gm)?.length, 1);
  });

  test('a failed stream is named the same way in every mode: a completion by its response.created', async () => {
    api.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sseEvent('response.created', { id: 'x1', object: 'completion', status: 'in_progress' }));
      res.end(sseEvent('response.failed', { id: 'x1', status: 'failed', error: { type: 'model_error', message: 'boom', code: 'm1' } }));
    });
    for (const extra of [[], ['--json']]) {
      const r = await run(['complete', 'hi', '--stream', ...extra]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /^error: completion x1 failed: model_error: boom \(code: m1\)$/m, extra.join(' '));
    }
  });

  test('a function named only in .start keeps its name; text that comes only as output_text.done is shown', async () => {
    api.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sseEvent('response.created', { id: 'r3', object: 'response', status: 'in_progress', conversation_id: 'c1' }));
      res.write(sseEvent('response.function_call.start', { output_index: 0, call_id: 'k1', name: 'knowledge_search' }));
      res.write(sseEvent('response.function_call_arguments.done', { output_index: 0, call_id: 'k1', arguments: '{"query":"keys"}' }));
      res.write(
        sseEvent('response.output_text.done', {
          type: 'response.output_text.done',
          text: 'All about keys',
          output_index: 1,
          content_index: 0,
        }),
      );
      res.end(sseEvent('response.completed', { id: 'r3', status: 'completed' }));
    });
    const r = await run(['send', 'c1', 'hi', '--stream']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'All about keys\n');
    assert.match(r.stderr, /^→ knowledge_search\(\{"query":"keys"\}\)$/m);
  });

  test('an error mid-stream ends the line of text first, also when stdout and stderr share one file', async () => {
    api.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sseEvent('response.created', { id: 'r4', object: 'response', status: 'in_progress' }));
      res.write(sseEvent('response.output_text.delta', { type: 't', delta: 'hi', output_index: 0, content_index: 0 }));
      // Then silence: the CLI's --timeout ends it (1 s, so that a loaded machine still answers the
      // request itself in time: this test is about the silence after the first event).
    });
    // One stream for both, as `parley … > out.txt 2>&1` gives.
    const both = new Capture();
    const code = await main(['send', 'c1', 'hi', '--stream', '--timeout', '1'], inlineIo({ env: api.env }, both, both));
    assert.equal(code, 3);
    const text = both.text;
    outputs.push(text);
    assert.match(
      text,
      new RegExp(`^hi\\nerror: timeout: the server went silent for 1s \\(${api.baseUrl}/apps/app_x/conversations/c1\\)\\n$`),
    );
  });
});

describe('what the CLI sends', { concurrency: false }, () => {
  const completion = { id: 'cmpl_1', object: 'completion', created_at: 1, text: 'ok', status: 'completed' };

  test('complete: --fast, --no-knowledge-search and --metadata reach the body; nothing else is sent unasked', async () => {
    api.handle((_req, res) => sendJson(res, completion));
    const from = api.requests.length;
    const r = await run(['complete', 'Write a line', '--fast', '--no-knowledge-search', '--metadata', '{"audience":"devs"}']);
    assert.equal(r.code, 0, r.stderr);
    const plain = await run(['complete', 'Write a line', '--no-stream']);
    assert.equal(plain.code, 0, plain.stderr);
    assert.deepEqual(
      api.requests.slice(from).map((q) => q.json),
      [{ prompt: 'Write a line', fast: true, knowledge_search: false, metadata: { audience: 'devs' } }, { prompt: 'Write a line' }],
    );
  });

  test('send --metadata, as JSON and as @file, reaches the body (D-9)', async () => {
    api.handle((_req, res) => sendJson(res, DEFAULTS_ONLY));
    const file = path.join(await tempDir(), 'context.json');
    fs.writeFileSync(file, '{"order": 1234}');
    const from = api.requests.length;
    for (const metadata of ['{"plan":"pro"}', `@${file}`]) {
      const r = await run(['send', 'c1', 'hi', '--no-stream', '--metadata', metadata]);
      assert.equal(r.code, 0, r.stderr);
    }
    assert.deepEqual(
      api.requests.slice(from).map((q) => q.json),
      [
        { message: { role: 'user', content: 'hi' }, stream: false, metadata: { plan: 'pro' } },
        { message: { role: 'user', content: 'hi' }, stream: false, metadata: { order: 1234 } },
      ],
    );
  });

  test('text starting with "-" goes after --', async () => {
    api.handle((_req, res) => sendJson(res, DEFAULTS_ONLY));
    const from = api.requests.length;
    const r = await run(['send', '--no-stream', 'c1', '--', '-1 is my answer']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(api.requests[from]!.json.message.content, '-1 is my answer');
  });

  test('list --all stops with an error when a server repeats a cursor with has_more: true', async () => {
    let n = 0;
    api.handle((req, res) => {
      const id = new URL(req.path, 'http://x').searchParams.get('after') === null ? 'c1' : 'c2';
      // Ends after 10 pages, so that a CLI that does not notice the loop still ends (and fails the test).
      sendJson(res, {
        object: 'list',
        data: [{ id, object: 'conversation', created_at: 1, title: null, generated_title: {} }],
        first_id: id,
        last_id: id,
        has_more: ++n < 10,
      });
    });
    const from = api.requests.length;
    const r = await run(['conversations', 'list', '--all', '--json']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout.trim().split('\n').length, 3);
    assert.match(r.stderr, /^error: invalid_response: has_more is true but the cursor c2 was followed already: the list would never end/m);
    assert.equal(api.requests.length - from, 3);
  });
});

test('no output of any run above shows the key', () => {
  assert.ok(outputs.length >= 20);
  for (const o of outputs) assert.ok(!o.includes(FAKE_KEY), `the key appeared in: ${o}`);
});
