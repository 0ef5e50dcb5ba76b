// Secrets stay out of the log (D-6, brief): a full run logged at the default level holds no key, no
// Authorization header and no message content, title, metadata or prompt (test/proof/secrets-process.test.ts:
// the same of the real server process's stdout and stderr).
import assert from 'node:assert/strict';
import path from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import pino from 'pino';
import { DEFAULTS } from '../src/config.ts';
import { APP, KEY, OTHER_TEAM_KEY, TARGET, startTestServer } from './support/helpers.ts';
import { rawRequest } from './support/raw-http.ts';

const _ROOT = path.resolve(import.meta.dirname, '..');

test('a full run logs no key, no Authorization header and no content at the default level', async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const s = await startTestServer({ logger: pino({ level: DEFAULTS.logLevel }, sink) });
  const CONTENT = 'SECRET-CONTENT-7f3a';
  const wrongKey = 'sk_live_WRONGKEY_0123456789abcdefghijklmnopqrstuv';
  try {
    const base = `/apps/${APP}/conversations`;
    const conv = (
      await s.call('POST', base, { title: `${CONTENT}-title`, external_user_id: `${CONTENT}-user`, metadata: { note: `${CONTENT}-meta` } })
    ).body;
    await s.call('PATCH', `${base}/${conv.id}`, { title: `${CONTENT}-renamed` });
    await s.call('GET', `${base}/${conv.id}`);
    await s.call('GET', `${base}?external_user_id=${CONTENT}-query`);
    await s.call('POST', `${base}/${conv.id}`, { message: { content: `${CONTENT}-message` }, metadata: { n: `${CONTENT}-meta2` } });
    await s.call('POST', `${base}/${conv.id}`, { message: { content: `${CONTENT}-stream` }, stream: true });
    await s.call('POST', `/apps/${APP}/completions`, { prompt: `${CONTENT}-prompt` });
    await s.call('POST', base, undefined, { raw: `{"title": "${CONTENT}-badjson`, headers: { 'content-type': 'application/json' } });
    await s.call('POST', base, { title: `${CONTENT}-x`, [`${CONTENT}-field`]: 1 });
    await s.call('GET', `${base}/${conv.id}`, undefined, { key: wrongKey });
    await s.call('GET', `${base}/${conv.id}`, undefined, { key: OTHER_TEAM_KEY });
    await s.call('GET', `${base}/${conv.id}`, undefined, { key: TARGET.publishable_key });
    await s.call('GET', `${base}/${conv.id}`, undefined, { key: null, headers: { authorization: `Basic ${KEY}` } });
    await s.call('DELETE', `${base}/${conv.id}`);
    await rawRequest(s.port, 'GET', `/v1/apps/${APP}/config?api_key=${KEY}`, {
      headers: { authorization: `Bearer ${KEY}`, cookie: `session=${CONTENT}` },
    });
  } finally {
    await s.close();
  }
  const log = lines.join('');
  assert.ok(lines.length >= 15, 'every request was logged');
  for (const secret of [KEY, OTHER_TEAM_KEY, wrongKey, TARGET.publishable_key, KEY.slice('sk_live_'.length)]) {
    assert.ok(!log.includes(secret), 'a key reached the log');
  }
  assert.doesNotMatch(log, /authorization|bearer|cookie/i);
  assert.ok(!log.includes(CONTENT), `content reached the log: ${log.split('\n').find((l) => l.includes(CONTENT))}`);
  // The log is still useful: one line per request with its method, path, status and request id.
  // (The start-up's own lines, such as the control plane's seeding (D-77), come first.)
  const first = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request');
  assert.equal(first?.msg, 'request');
  assert.ok(first.req_id && first.method && first.status);
});

test("a request's log line says why it failed: the error's type and code, never its message", async () => {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString('utf8')));
      done();
    },
  });
  const s = await startTestServer({ logger: pino({ level: DEFAULTS.logLevel }, sink) });
  const CONTENT = 'SECRET-CONTENT-19c2';
  const base = `/apps/${APP}/conversations`;
  let answers: Array<{ status: number; headers: Headers; body: { error: { type: string; code: string | null; message: string } } }>;
  let ok: { headers: Headers };
  try {
    answers = [
      // An unknown field is named in the error's message: the log must not carry it.
      await s.call('POST', base, { title: 't', [`${CONTENT}-field`]: 1 }),
      await s.call('GET', `${base}/conv_nope`),
      await s.call('GET', `${base}/conv_x`, undefined, { key: 'sk_live_WRONGKEY_0123456789abcdefghijklmnopqrstuv' }),
    ];
    ok = await s.call('GET', base);
  } finally {
    await s.close();
  }
  const lineOf = (headers: Headers) => {
    const line = lines.find((l) => l.msg === 'request' && l.req_id === headers.get('x-request-id'));
    assert.ok(line, `no log line for ${headers.get('x-request-id')}`);
    return line;
  };
  assert.deepEqual(
    answers.map((a) => [a.status, a.body.error.type, a.body.error.code]),
    [
      [400, 'invalid_request_error', 'unknown_parameter'],
      [404, 'not_found', null],
      [401, 'invalid_api_key', null],
    ],
  );
  for (const a of answers) {
    const line = lineOf(a.headers);
    assert.equal(line.status, a.status);
    assert.equal(line.error_type, a.body.error.type);
    assert.equal(line.error_code, a.body.error.code ?? undefined, 'a null code is left out');
    assert.ok(!JSON.stringify(line).includes(a.body.error.message), 'the message reached the log');
  }
  const success = lineOf(ok.headers);
  assert.equal('error_type' in success || 'error_code' in success, false, 'a success names no error');
  assert.ok(!JSON.stringify(lines).includes(CONTENT), 'content reached the log');
});
