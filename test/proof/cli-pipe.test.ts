// The CLI as a process whose reader leaves early (`| head -1`): EPIPE is what a closed pipe gives a
// process, and the CLI ends quietly with exit 0 (test/cli-interop.test.ts: the rest of its interoperation).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, test, type TestContext } from 'node:test';
import { FAKE_KEY, sendJson, spawnCli, sseEvent, startFakeApi, waitFor, type FakeApi } from '../support/cli-helpers.ts';

let api: FakeApi;
before(async () => {
  api = await startFakeApi();
});
after(() => api.close());

const outputs: string[] = [];

// Real processes: EPIPE is what a closed pipe gives a process. The bound makes a CLI that does not stop fail, not hang.
describe('the reader leaves early (`| head -1`)', { concurrency: false }, () => {
  /** Runs the CLI, closes its stdout after the first line, as `head -1` does, and waits for the end. */
  async function headOne(t: TestContext, args: string[]) {
    const child = spawnCli(args, { env: api.env });
    t.after(() => child.kill('SIGKILL'));
    child.stdin.end();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const closed = once(child, 'close');
    const first = (await waitFor(child.stdout, /\n/)).split('\n')[0]!;
    child.stdout.destroy();
    const [code] = (await closed) as [number];
    outputs.push(first, stderr);
    return { code, stderr, first };
  }

  test('conversations list --all --json against an endless list: exit 0, no stack trace', { timeout: 60_000 }, async (t) => {
    let n = 0;
    api.handle((_req, res) => {
      n++;
      sendJson(res, {
        object: 'list',
        data: [{ id: `c${n}`, object: 'conversation', created_at: 1, title: null, generated_title: {} }],
        first_id: `c${n}`,
        last_id: `c${n}`,
        has_more: true,
      });
    });
    const r = await headOne(t, ['conversations', 'list', '--all', '--json', '--limit', '1']);
    assert.equal(JSON.parse(r.first).data[0].id, 'c1');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
  });

  test('send --stream --json on an endless stream: exit 0, the stream is abandoned', { timeout: 60_000 }, async (t) => {
    const delta = sseEvent('response.output_text.delta', {
      type: 'response.output_text.delta',
      delta: 'more ',
      output_index: 0,
      content_index: 0,
    });
    let closedByClient: Promise<unknown> | undefined;
    api.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(sseEvent('response.created', { type: 'response.created', id: 'r5', object: 'response', status: 'in_progress' }));
      closedByClient = once(res, 'close');
      // As fast as the client reads, forever: only the client can end it.
      const pump = () => {
        while (!res.destroyed && res.write(delta));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    const r = await headOne(t, ['send', 'c1', 'hi', '--stream', '--json']);
    assert.equal(JSON.parse(r.first).type, 'response.created');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    await closedByClient;
  });
});

test('no output of any run above shows the key', () => {
  assert.ok(outputs.length >= 4);
  for (const o of outputs) assert.ok(!o.includes(FAKE_KEY), `the key appeared in: ${o}`);
});
