// The real entry point on an OpenAI-compatible server, as processes (proof tier: two servers one after
// the other): `--record-tapes` with the key set and every log line on, then `--replay-tapes` with the
// server gone and no OPENAI_BASE_URL. The key reaches the model and nothing else (D-144): not a log
// line at level trace, not a tape, not an error.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { refusal, sse, startFakeOpenAI, textChunks } from '../support/fake-openai.ts';
import { APP, KEY, NO_COVERAGE, tempDir } from '../support/helpers.ts';
import { listening } from '../support/server-process.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SECRET = 'sk-proc-Hn5tR8wQ2zK7vB3m';

function serve(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--port', '0', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...NO_COVERAGE, PARLEY_MODEL: 'openai:fake-model', LOG_LEVEL: 'trace', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  return { child, ...listening(child), stdout: () => out };
}

async function send(base: string, content: string): Promise<any> {
  const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const conv = (await (await fetch(`${base}/apps/${APP}/conversations`, { method: 'POST', headers, body: '{}' })).json()) as { id: string };
  const r = await fetch(`${base}/apps/${APP}/conversations/${conv.id}`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ message: { content } }),
  });
  return r.json();
}

test('recorded by one process with the key, replayed by another with no model; the key is in no log, tape or error', {
  timeout: 120_000,
}, async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const dir = await tempDir('parley-tapes-proc-');
  fake.script(sse(textChunks(['Hello from the model.'])), sse(textChunks(['{"en-ca":"Greeting","fr-ca":"Salutation"}'])));
  const recording = serve(['--data-dir', await tempDir(), '--record-tapes', dir], { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: SECRET });
  t.after(() => recording.child.kill('SIGKILL'));
  const base = await recording.base;
  const answered = await send(base, 'Hello there');
  assert.deepEqual([answered.status, answered.output[0].content[0].text], ['completed', 'Hello from the model.']);
  assert.equal(fake.requests[0]!.headers.authorization, `Bearer ${SECRET}`, 'the key reached the model');
  fake.script(refusal(401, `Incorrect API key provided: ${SECRET}`));
  const refused = await send(base, 'Hello again');
  assert.deepEqual([refused.status, refused.error.code], ['failed', 'model_unauthorized']);
  recording.child.kill('SIGTERM');
  assert.equal(await recording.exited, 0);
  const tapes = await Promise.all((await fs.readdir(dir)).map((n) => fs.readFile(path.join(dir, n), 'utf8')));
  assert.ok(tapes.length >= 2);
  for (const [what, text] of [
    ['stdout', recording.stdout()],
    ['stderr', recording.stderr()],
    ['a tape', tapes.join('\n')],
    ['an answer', JSON.stringify(refused)],
  ])
    assert.ok(!text!.includes(SECRET), `the key is not in ${what}`);
  assert.match(recording.stdout(), /model \(PARLEY_MODEL\): openai:fake-model at http:\/\/127\.0\.0\.1:\d+\/v1, recording tapes in /);

  await fake.close();
  const replaying = serve(['--data-dir', await tempDir(), '--replay-tapes', dir, '--tape-timing', 'fast'], {});
  t.after(() => replaying.child.kill('SIGKILL'));
  const again = await send(await replaying.base, 'Hello there');
  assert.deepEqual([again.status, again.output[0].content[0].text], ['completed', 'Hello from the model.']);
  const missing = await send(await replaying.base, 'Something never recorded');
  assert.deepEqual([missing.status, missing.error.code], ['failed', 'tape_missing']);
  replaying.child.kill('SIGTERM');
  assert.equal(await replaying.exited, 0);
});
