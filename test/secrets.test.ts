// Secrets stay out of the log (D-6, brief): a full run logged at the default level holds no key, no
// Authorization header and no message content, title, metadata or prompt.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import pino from 'pino';
import { DEFAULTS } from '../src/config.ts';
import { APP, FIXTURES_DIR, KEY, OTHER_TEAM_KEY, TARGET, startTestServer, tempDir } from './support/helpers.ts';
import { rawRequest } from './support/raw-http.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

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
  const first = JSON.parse(lines[0]!);
  assert.equal(first.msg, 'request');
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

/** Sends raw bytes (what fetch cannot send) and resolves with the answer once the server closes. */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(bytes));
    let out = '';
    socket.on('data', (d: Buffer) => (out += d.toString('utf8')));
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
  });
}

test('the real server process (src/main.ts, default log level): its stdout and stderr hold no key, no Authorization value and no content', {
  timeout: 60_000,
}, async () => {
  const env: Record<string, string> = { ...process.env } as Record<string, string>;
  delete env.LOG_LEVEL; // the default level, as npm start runs it
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/main.ts', '--port', '0', '--data-dir', await tempDir(), '--fixtures', FIXTURES_DIR],
    {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const baseUrl = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', () => {
      const m = /listening on (http:\/\/\S+\/v1)/.exec(stdout);
      if (m && stdout.includes('try: curl')) resolve(m[1]!);
    });
    void exited.then((code) => reject(new Error(`server exited (${code}) before listening: ${stderr}`)));
  });
  const port = Number(new URL(baseUrl).port);
  const CONTENT = 'SECRET-CONTENT-9c1d';
  const wrongKey = 'sk_live_WRONGKEY_abcdefghijklmnopqrstuv0123456789';
  const call = async (method: string, p: string, body?: unknown, headers: Record<string, string> = { authorization: `Bearer ${KEY}` }) => {
    const res = await fetch(baseUrl + p, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: typeof body === 'string' ? body : body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  };
  const statuses: number[] = [];
  try {
    const base = `/apps/${APP}/conversations`;
    const created = await call('POST', base, {
      title: `${CONTENT}-title`,
      external_user_id: `${CONTENT}-user`,
      metadata: { note: `${CONTENT}-meta` },
    });
    const id = JSON.parse(created.text).id as string;
    statuses.push(created.status);
    for (const [method, p, body, headers] of [
      ['PATCH', `${base}/${id}`, { title: `${CONTENT}-renamed` }],
      ['GET', `${base}/${id}`],
      ['GET', `${base}?external_user_id=${CONTENT}-query`],
      ['POST', `${base}/${id}`, { message: { content: `${CONTENT}-message` }, metadata: { n: `${CONTENT}-meta2` } }],
      ['POST', `${base}/${id}`, { message: { content: `${CONTENT}-stream` }, stream: true }],
      ['POST', `/apps/${APP}/completions`, { prompt: `${CONTENT}-prompt` }],
      ['POST', base, `{"title": "${CONTENT}-badjson`],
      ['POST', base, { title: `${CONTENT}-x`, [`${CONTENT}-field`]: 1 }],
      ['GET', `${base}/${id}`, undefined, { authorization: `Bearer ${wrongKey}` }],
      ['GET', `${base}/${id}`, undefined, { authorization: `Bearer ${OTHER_TEAM_KEY}` }],
      ['GET', `${base}/${id}`, undefined, { authorization: `Bearer ${TARGET.publishable_key}` }],
      ['GET', `${base}/${id}`, undefined, { authorization: `Basic ${KEY}` }],
      ['GET', `/apps/${APP}/config?api_key=${KEY}`, undefined, { authorization: `Bearer ${KEY}`, cookie: `session=${CONTENT}` }],
      ['DELETE', `${base}/${id}`],
    ] as Array<[string, string, unknown?, Record<string, string>?]>) {
      statuses.push((await call(method, p, body, headers)).status);
    }
    // Client errors node's parser finds (clientError), and one without Host: logged, never a 500.
    const garbage = await rawExchange(port, `GARBAGE ${CONTENT} ${KEY}\r\nAuthorization: Bearer ${KEY}\r\n\r\n`);
    const noHost = await rawExchange(
      port,
      `GET /v1/apps/${APP}/config?q=${CONTENT} HTTP/1.1\r\nAuthorization: Bearer ${KEY}\r\nConnection: close\r\n\r\n`,
    );
    statuses.push(Number(garbage.split(' ')[1]), Number(noHost.split(' ')[1]));
  } finally {
    child.kill('SIGTERM');
  }
  assert.equal(await exited, 0, stderr);
  assert.ok(
    statuses.every((st) => st < 500),
    `no 500: ${statuses.join(' ')}`,
  );
  assert.ok(statuses.includes(200) && statuses.includes(400) && statuses.includes(401) && statuses.includes(403), statuses.join(' '));

  // Everything after the banner is the log; the banner shows keys redacted (D-94).
  const bannerEnd = stdout.indexOf('\n', stdout.indexOf('try: curl')) + 1;
  assert.ok(stdout.slice(0, bannerEnd).includes(`demo secret key: sk_live_…${KEY.slice(-4)} `), stdout.slice(0, bannerEnd));
  const log = stdout.slice(bannerEnd);
  const lines = log.split('\n').filter((l) => l !== '');
  for (const l of lines) JSON.parse(l); // nothing but log lines
  assert.ok(lines.filter((l) => JSON.parse(l).msg === 'request').length >= 16, 'every request was logged');
  assert.ok(
    lines.some((l) => JSON.parse(l).msg === 'client error'),
    'the malformed request was logged',
  );
  const output = log + stderr;
  // The banner included (D-94).
  for (const secret of [KEY, OTHER_TEAM_KEY, wrongKey, TARGET.publishable_key, KEY.slice('sk_live_'.length)]) {
    assert.ok(!(stdout + stderr).includes(secret), 'a key reached the output');
  }
  assert.doesNotMatch(output, /authorization|bearer|cookie/i);
  assert.ok(!output.includes(CONTENT), `content reached the output: ${output.split('\n').find((l) => l.includes(CONTENT))}`);
});
