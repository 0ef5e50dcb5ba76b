// Secrets stay out of the log (D-6, brief): a full run logged at the default level holds no key, no
// Authorization header and no message content, title, metadata or prompt.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import pino from 'pino';
import { DEFAULTS } from '../src/config.ts';
import { APP, KEY, OTHER_TEAM_KEY, TARGET, startTestServer } from './helpers.ts';
import { rawRequest } from './raw-http.ts';

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
    const conv = (await s.call('POST', base, { title: `${CONTENT}-title`, external_user_id: `${CONTENT}-user`, metadata: { note: `${CONTENT}-meta` } })).body;
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
    await rawRequest(s.port, 'GET', `/v1/apps/${APP}/config?api_key=${KEY}`, { headers: { authorization: `Bearer ${KEY}`, cookie: `session=${CONTENT}` } });
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
  const first = JSON.parse(lines[0]!);
  assert.equal(first.msg, 'request');
  assert.ok(first.req_id && first.method && first.status);
});
