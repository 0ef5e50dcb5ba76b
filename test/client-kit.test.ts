// The client kit (docs/client-kit.md) on a few cases in the everyday tier: the loop from a key's
// script to the verdict, with the reference client; the command's list and usage errors. Every case,
// and the broken clients, are proved in test/proof/client-kit.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { CLIENT_CASES, runClientKit } from '../conformance/client/kit.ts';
import { REFERENCE_CLIENT } from './support/client-mutants.ts';
import { runCli } from './support/cli-helpers.ts';
import { tempDir } from './support/helpers.ts';

test('the reference client passes a clean create and a stream cut after 3 events, resumed from event 2 (D-32)', {
  timeout: 120_000,
}, async () => {
  const cases = CLIENT_CASES.filter((c) => c.id === 'K-create' || c.id === 'K-stream-drop');
  const r = await runClientKit({ cmd: `node --import tsx ${REFERENCE_CLIENT}`, cases, timeoutMs: 60_000 });
  assert.deepEqual(
    r.results.map((c) => [c.id, c.status, c.failure?.message]),
    [
      ['K-create', 'passed', undefined],
      ['K-stream-drop', 'passed', undefined],
      ['K-stream-drop/should', 'passed', undefined],
    ],
  );
});

test('a client that prints nothing fails, with what it printed as the evidence', { timeout: 60_000 }, async () => {
  const cases = CLIENT_CASES.filter((c) => c.id === 'K-create');
  const r = await runClientKit({ cmd: 'echo not json', cases, timeoutMs: 30_000 });
  assert.equal(r.results[0]!.status, 'failed');
  assert.match(r.results[0]!.failure!.message, /no JSON object as its last line/);
});

test('a client that does not do a task has its cases skipped, never passed (D-132)', { timeout: 60_000 }, async () => {
  const cases = CLIENT_CASES.filter((c) => c.id === 'K-json');
  const r = await runClientKit({ cmd: `echo '{"unsupported": true}'`, cases, timeoutMs: 30_000 });
  assert.equal(r.results[0]!.status, 'skipped');
});

test('parley conformance client: --list names every case; no --cmd is a usage error', async () => {
  const list = await runCli(['conformance', 'client', '--list']);
  assert.equal(list.code, 0, list.stderr);
  for (const c of CLIENT_CASES) assert.match(list.stdout, new RegExp(`^${c.id} `, 'm'));
  const bare = await runCli(['conformance', 'client']);
  assert.equal(bare.code, 2);
  assert.match(bare.stderr, /--cmd "<command>" is required/);
});

test("docs/client-kit.md's first client, as printed, passes its two tasks and is skipped on the others (D-132)", {
  timeout: 120_000,
}, async () => {
  const docs = await fs.readFile(path.resolve(import.meta.dirname, '../docs/client-kit.md'), 'utf8');
  const code = /## Your first client in ten minutes[\s\S]*?```js\n([\s\S]*?)```/.exec(docs)![1]!;
  const file = path.join(await tempDir('parley-first-client-'), 'my-client.mjs');
  await fs.writeFile(file, code);
  const cases = CLIENT_CASES.filter((c) => ['K-create', 'K-json', 'K-stream'].includes(c.id));
  const r = await runClientKit({ cmd: `node ${file}`, cases, timeoutMs: 30_000 });
  assert.deepEqual(
    r.results.map((c) => [c.id, c.status, c.failure?.message]),
    [
      ['K-create', 'passed', undefined],
      ['K-stream', 'skipped', undefined],
      ['K-json', 'passed', undefined],
    ],
  );
});

/** A widget client on the widget API, as a page's script would be, with nothing of the widget's own: no retry. */
const WIDGET_CLIENT = `const e = process.env;
const base = new URL(e.PARLEY_BASE_URL).origin + '/widget/v1/apps/' + e.PARLEY_APP_ID;
const call = (method, p, auth, body) => fetch(base + p, {
  method,
  headers: { origin: e.PARLEY_WIDGET_ORIGIN, authorization: 'Bearer ' + auth, 'content-type': 'application/json' },
  body: body && JSON.stringify(body),
});
if (e.PARLEY_TASK !== 'send-stream') console.log('{"unsupported": true}');
else {
  const s = await (await call('POST', '/visitors', e.PARLEY_PUBLISHABLE_KEY, {})).json();
  await call('GET', '/config', s.token);
  const c = await (await call('POST', '/conversations', s.token, {})).json();
  const r = await call('POST', '/conversations/' + c.id, s.token, { message: { content: e.PARLEY_MESSAGE }, stream: false });
  const b = await r.json();
  console.log(JSON.stringify({ error: { status: r.status, type: b.error?.type, code: b.error?.code } }));
}
`;

test("D-134: with --widget the case's script is on the client's publishable key, after its setup: the send meets the 429, and only it is judged", {
  timeout: 60_000,
}, async () => {
  const file = path.join(await tempDir('parley-widget-client-'), 'widget-client.mjs');
  await fs.writeFile(file, WIDGET_CLIENT);
  const cases = CLIENT_CASES.filter((c) => c.id === 'K-stream-429');
  const r = await runClientKit({ cmd: `node ${file}`, cases, timeoutMs: 30_000, widget: true });
  assert.deepEqual(
    r.results.map((c) => [c.id, c.status]),
    [
      ['K-stream-429', 'passed'],
      ['K-stream-429/should', 'failed'],
    ],
  );
  // The one request judged is the send, answered by the script's first step.
  assert.match(
    r.results[1]!.failure!.response!,
    /requests the kit received:\n {2}\+0 ms POST \/widget\/v1\/apps\/app_demo\/conversations\/conv_\S+ \[4\] → 429\n/,
  );
  assert.match(r.results[1]!.failure!.message, /did not retry/);
});
