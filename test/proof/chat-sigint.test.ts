// The chat as a process: Ctrl-C (SIGINT) is the operating system's signal; it cancels the reply in
// progress through the cancel endpoint (D-33) and the session goes on (test/cli-stream.test.ts: the rest
// of send, complete and chat in-process). The bound makes a chat that never answers fail, not hang.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, test } from 'node:test';
import { KEY, startTestServer } from '../support/helpers.ts';
import { serverEnv, spawnCli, waitFor } from '../support/cli-helpers.ts';

const s = await startTestServer();
after(() => s.close());
const env = serverEnv(s.baseUrl);
const outputs: string[] = [];
const SLOW = 'app_slow';

async function conversation(app: string): Promise<string> {
  const r = await s.call('POST', `/apps/${app}/conversations`, {});
  assert.equal(r.status, 200);
  return r.body.id;
}

test('Ctrl-C (SIGINT) cancels the reply in progress through the cancel endpoint (D-33) and the session goes on', {
  timeout: 60_000,
}, async (t) => {
  const id = await conversation(SLOW);
  const child = spawnCli(['chat', id, '--app', SLOW], { env });
  const exited = once(child, 'close');
  t.after(() => child.kill('SIGKILL'));
  const err = { text: '' };
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stdin.write('Tell me everything about rate limits and billing\n');
  await waitFor(child.stdout, /\S/);
  child.kill('SIGINT');
  await waitFor(child.stderr, /^\[cancelled\]$/m, err);
  assert.equal(child.exitCode, null);
  // Still there: the next line gets a full reply, then the end of input ends the session.
  child.stdin.end('hi\n');
  const stderrDone = waitFor(child.stderr, /^\[completed resp_\w+\]$/m, err);
  await stderrDone;
  const [code] = (await exited) as [number];
  outputs.push(stdout, err.text);
  assert.equal(code, 0, err.text);
  // D-33: the cancelled reply was kept, as failed with code cancelled; the second one completed.
  const items = (await s.call('GET', `/apps/${SLOW}/conversations/${id}`)).body.items as Array<{ role?: string; response_id?: string }>;
  assert.equal(items.filter((i) => i.role === 'user').length, 2);
  const responses = (await s.store.readHistory(id)).responses;
  assert.deepEqual(
    responses.map((r) => [r.status, r.error?.code]),
    [
      ['failed', 'cancelled'],
      ['completed', undefined],
    ],
  );
  // What was generated before Ctrl-C is in the history, under the cancelled response, marked (D-39).
  assert.ok(
    items.some((i) => i.role === 'assistant' && i.response_id === responses[0]!.id && (i as { status?: string }).status === 'incomplete'),
  );
});

test('no output of the chat above shows the key', () => {
  assert.ok(outputs.length >= 2);
  for (const o of outputs) assert.ok(!o.includes(KEY), `the key appeared in: ${o}`);
});
