// Secrets stay out of the real server process's output (D-6): src/main.ts at its default log level, its
// stdout and stderr, across a run of good and bad requests (test/secrets.test.ts: the log in-process).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { APP, FIXTURES_DIR, KEY, OTHER_TEAM_KEY, TARGET, tempDir } from '../support/helpers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

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
