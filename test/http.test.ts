// The HTTP layer: every error this server produces before a handler's own rules (§5, §7, D-1…D-6),
// x-request-id on every answer, clientError answers, and Connection: close while closing.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { APP, KEY, OTHER_TEAM_KEY, TARGET, startTestServer, type TestServer } from './support/helpers.ts';
import { ExactErrorBody } from './support/shapes.ts';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const conv = `/apps/${APP}/conversations`;

/** Asserts an error answer: status, the four fields of the error object, and a request id. */
function assertError(
  r: { status: number; headers: Headers; body: any },
  status: number,
  type: string,
  param: string | null,
  code: string | null,
) {
  assert.equal(r.status, status, JSON.stringify(r.body));
  const body = ExactErrorBody.parse(r.body);
  assert.deepEqual([body.error.type, body.error.param, body.error.code], [type, param, code]);
  assert.match(r.headers.get('x-request-id') ?? '', /^req_[0-9a-f]{24}$/);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
}

/** Sends raw bytes and returns the raw answer (for what fetch cannot send). */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(bytes));
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => (out += d));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
}

function parseRaw(text: string): { status: number; headers: Record<string, string>; body: any } {
  const [head, body] = text.split('\r\n\r\n', 2) as [string, string];
  const [statusLine, ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body: JSON.parse(body) };
}

describe('authentication (§5, D-6)', () => {
  test('a missing Authorization header is 401 invalid_api_key', async () => {
    assertError(await s.call('GET', `/apps/${APP}/config`, undefined, { key: null }), 401, 'invalid_api_key', null, null);
  });

  test('another scheme is 401 invalid_api_key', async () => {
    const r = await s.call('GET', `/apps/${APP}/config`, undefined, { key: null, headers: { authorization: `Basic ${KEY}` } });
    assertError(r, 401, 'invalid_api_key', null, null);
  });

  test('an unknown key is 401 and the answer never echoes it', async () => {
    const r = await s.call('GET', `/apps/${APP}/config`, undefined, { key: 'sk_live_unknown_0000000000000000000000000000' });
    assertError(r, 401, 'invalid_api_key', null, null);
    assert.doesNotMatch(JSON.stringify(r.body), /unknown_0000/);
  });

  test('the scheme is case-insensitive', async () => {
    const r = await s.call('GET', `/apps/${APP}/config`, undefined, { key: null, headers: { authorization: `bearer ${KEY}` } });
    assert.equal(r.status, 200);
  });

  test("another team's app is 403 access_denied", async () => {
    assertError(await s.call('GET', `/apps/${TARGET.apps.other_team}/config`), 403, 'access_denied', null, null);
  });

  test("the other team's key may use its own app and not ours", async () => {
    assert.equal((await s.call('GET', `/apps/${TARGET.apps.other_team}/config`, undefined, { key: OTHER_TEAM_KEY })).status, 200);
    assertError(await s.call('GET', `/apps/${APP}/config`, undefined, { key: OTHER_TEAM_KEY }), 403, 'access_denied', null, null);
  });

  test('a publishable key is 403 access_denied, code publishable_key', async () => {
    assertError(await s.call('GET', conv, undefined, { key: TARGET.publishable_key }), 403, 'access_denied', null, 'publishable_key');
  });

  test('a disabled app is 403 app_inactive', async () => {
    assertError(await s.call('GET', `/apps/${TARGET.apps.inactive}/config`), 403, 'app_inactive', null, null);
  });

  test('an unknown app is 404 not_found, param app_id', async () => {
    assertError(await s.call('GET', '/apps/app_nope/conversations'), 404, 'not_found', 'app_id', null);
  });

  test('D-4: authentication comes before the app check, the app check before the body', async () => {
    assertError(await s.call('GET', '/apps/app_nope/config', undefined, { key: null }), 401, 'invalid_api_key', null, null);
    assertError(await s.call('POST', `/apps/${TARGET.apps.inactive}/conversations`, { nope: 1 }), 403, 'app_inactive', null, null);
    assertError(
      await s.call('PATCH', `${conv}/conv_missing`, { title: 'x', nope: 1 }),
      400,
      'invalid_request_error',
      'nope',
      'unknown_parameter',
    );
  });

  test('no key and no Authorization header ever reaches the log', async () => {
    const lines: string[] = [];
    const logged = await startTestServer({ logger: pino({ level: 'trace' }, { write: (l: string) => void lines.push(l) }) });
    try {
      await logged.call('GET', `/apps/${APP}/config`);
      await logged.call('GET', `/apps/${APP}/config`, undefined, { key: 'sk_live_wrong_1234567890123456789012345678' });
    } finally {
      await logged.close();
    }
    const text = lines.join('');
    assert.match(text, /"status":200/);
    assert.match(text, /"status":401/);
    assert.doesNotMatch(text, /sk_live_|authorization/i);
  });
});

describe('routing (D-3)', () => {
  test('an unknown path is 404 not_found, inside and outside /v1', async () => {
    assertError(await s.call('GET', `/apps/${APP}/nothing`), 404, 'not_found', null, null);
    const outside = await fetch(s.baseUrl.replace(/\/v1$/, '/v2/apps'));
    assertError({ status: outside.status, headers: outside.headers, body: await outside.json() }, 404, 'not_found', null, null);
  });

  test('a known path with the wrong method is 405 method_not_allowed with Allow', async () => {
    const r = await s.call('PUT', `${conv}/conv_x`, { title: 'x' });
    assertError(r, 405, 'invalid_request_error', null, 'method_not_allowed');
    const allow = (r.headers.get('allow') ?? '').split(', ');
    for (const m of ['GET', 'PATCH', 'DELETE']) assert.ok(allow.includes(m), `Allow lists ${m}`);
    assert.ok(!allow.includes('PUT'));
    const list = await s.call('DELETE', conv);
    assertError(list, 405, 'invalid_request_error', null, 'method_not_allowed');
    assert.equal(list.headers.get('allow'), 'POST, GET');
  });

  test('a trailing, doubled or empty segment is an unknown path: 404, not the route it resembles', async () => {
    for (const path of [
      `${conv}/`,
      `/apps/${APP}//conversations`,
      `//apps//${APP}//conversations`,
      `/apps/${APP}/config/`,
      '/apps//config',
      `${conv}//`,
    ]) {
      assertError(await s.call('GET', path), 404, 'not_found', null, null);
    }
    assert.equal((await s.call('GET', conv)).status, 200, 'the path itself still answers');
  });

  test('a conversation id that is not valid percent-encoding is 404', async () => {
    assertError(await s.call('GET', `${conv}/%E0%A4%A`), 404, 'not_found', null, null);
  });

  test('an unknown conversation is 404 not_found, param conversation_id', async () => {
    for (const m of ['GET', 'PATCH', 'DELETE'] as const) {
      assertError(
        await s.call(m, `${conv}/conv_missing`, m === 'PATCH' ? { title: 'x' } : undefined),
        404,
        'not_found',
        'conversation_id',
        null,
      );
    }
  });

  test("another app's conversation is 404 in this app", async () => {
    const { body: c } = await s.call('POST', `/apps/${TARGET.apps.generative_ui}/conversations`);
    assertError(await s.call('GET', `${conv}/${c.id}`), 404, 'not_found', 'conversation_id', null);
  });
});

describe('request bodies (D-1, D-2)', () => {
  test('malformed JSON is 400 invalid_json', async () => {
    const r = await s.call('POST', conv, undefined, { raw: '{"title": ', headers: { 'content-type': 'application/json' } });
    assertError(r, 400, 'invalid_request_error', null, 'invalid_json');
  });

  test('a body that is not UTF-8 is 400 invalid_json', async () => {
    const res = await fetch(s.baseUrl + conv, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]),
    });
    assertError({ status: res.status, headers: res.headers, body: await res.json() }, 400, 'invalid_request_error', null, 'invalid_json');
  });

  test('a body that is not an object (null, array, string) is 400 invalid_type', async () => {
    for (const raw of ['null', '[]', '"x"', '3']) {
      const r = await s.call('POST', conv, undefined, { raw, headers: { 'content-type': 'application/json' } });
      assertError(r, 400, 'invalid_request_error', null, 'invalid_type');
    }
  });

  test('an empty body counts as {} where every field is optional', async () => {
    const r = await s.call('POST', conv, undefined, { raw: '', headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 200);
  });

  test('nesting beyond the bound is 400 before anything walks it', async () => {
    const deep = `{"metadata":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const r = await s.call('POST', conv, undefined, { raw: deep, headers: { 'content-type': 'application/json' } });
    assertError(r, 400, 'invalid_request_error', null, 'invalid_value');
  });

  test('a Content-Type other than JSON is 415 unsupported_media_type', async () => {
    const r = await s.call('POST', conv, undefined, { raw: 'title=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assertError(r, 415, 'invalid_request_error', null, 'unsupported_media_type');
    const none = await fetch(s.baseUrl + conv, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}` },
      body: new Uint8Array([0x7b, 0x7d]),
    });
    assertError(
      { status: none.status, headers: none.headers, body: await none.json() },
      415,
      'invalid_request_error',
      null,
      'unsupported_media_type',
    );
  });

  test('a +json media type and a charset are accepted', async () => {
    const r = await s.call('POST', conv, { title: 'x' }, { headers: { 'content-type': 'application/vnd.parley+json; charset=utf-8' } });
    assert.equal(r.status, 200);
  });

  test('a body of exactly 1 MiB is read; one byte more is 413 body_too_large (D-2)', async () => {
    const before = (await s.call('GET', `/apps/${APP}/metrics`)).body.total_conversations;
    const pad = (n: number) => {
      const head = '{"title":"t","metadata":{"a":"';
      const tail = '"}}';
      return head + 'x'.repeat(n - head.length - tail.length) + tail;
    };
    const exact = await s.call('POST', conv, undefined, { raw: pad(1024 * 1024), headers: { 'content-type': 'application/json' } });
    // Read whole, then refused by the metadata rule rather than the body cap.
    assertError(exact, 400, 'invalid_request_error', 'metadata', 'too_large');
    const over = await s.call('POST', conv, undefined, { raw: pad(1024 * 1024 + 1), headers: { 'content-type': 'application/json' } });
    assertError(over, 413, 'invalid_request_error', null, 'body_too_large');
    assert.equal(over.headers.get('connection'), 'close');
    assert.equal((await s.call('GET', `/apps/${APP}/metrics`)).body.total_conversations, before);
  });

  test('a chunked body over 1 MiB is 413 too (no Content-Length to trust)', async () => {
    const chunk = Buffer.alloc(256 * 1024, 0x20);
    const stream = new ReadableStream({
      start(c) {
        for (let i = 0; i < 5; i++) c.enqueue(chunk);
        c.close();
      },
    });
    const res = await fetch(s.baseUrl + conv, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    assertError({ status: res.status, headers: res.headers, body: await res.json() }, 413, 'invalid_request_error', null, 'body_too_large');
  });

  test('a value outside an enumeration: the message names the allowed values and what was sent (D-1)', async () => {
    const order = await s.call('GET', `${conv}?order=up`);
    assertError(order, 400, 'invalid_request_error', 'order', 'invalid_value');
    assert.equal(order.body.error.message, 'order must be one of "asc", "desc" (got "up").');
    const created = await s.call('POST', conv, {});
    const role = await s.call('POST', `${conv}/${created.body.id}`, { message: { content: 'hi', role: 'assistant' } });
    assertError(role, 400, 'invalid_request_error', 'message.role', 'invalid_value');
    assert.equal(role.body.error.message, 'message.role must be "user" (got "assistant").');
  });

  test('a missing field beside an unknown one: still missing_parameter, and the message names the stray field (D-1)', async () => {
    const created = await s.call('POST', conv, {});
    const r = await s.call('POST', `${conv}/${created.body.id}`, { messages: { content: 'hi' } });
    assertError(r, 400, 'invalid_request_error', 'message', 'missing_parameter');
    assert.equal(r.body.error.message, 'Missing required parameter: message (unknown parameter given: messages).');
    const nested = await s.call('POST', `${conv}/${created.body.id}`, { message: { text: 'hi' } });
    assertError(nested, 400, 'invalid_request_error', 'message.content', 'missing_parameter');
    assert.match(nested.body.error.message, /unknown parameter given: message\.text/);
  });

  test('a repeated query parameter is 400 rather than a silent pick', async () => {
    assertError(await s.call('GET', `${conv}?limit=1&limit=2`), 400, 'invalid_request_error', 'limit', 'invalid_value');
  });
});

describe('what node:http would answer by itself (clientError)', () => {
  test('a malformed request gets a 400 JSON error object with a request id', async () => {
    const r = parseRaw(await rawExchange(s.port, 'GARBAGE\r\n\r\n'));
    assert.equal(r.status, 400);
    ExactErrorBody.parse(r.body);
    assert.deepEqual([r.body.error.type, r.body.error.code], ['invalid_request_error', 'malformed_request']);
    assert.match(r.headers['x-request-id']!, /^req_/);
    assert.equal(r.headers.connection, 'close');
  });

  test('an unencoded non-ASCII character in the URL: 400 malformed_request saying to percent-encode it', async () => {
    const r = parseRaw(await rawExchange(s.port, `GET /v1/apps/${APP}/conversations?after=conv_é HTTP/1.1\r\nHost: x\r\n\r\n`));
    assert.equal(r.status, 400);
    assert.deepEqual([r.body.error.type, r.body.error.code], ['invalid_request_error', 'malformed_request']);
    assert.match(r.body.error.message, /percent-encode/);
  });

  test('an over-long URL gets 431 with a JSON error object', async () => {
    const r = parseRaw(await rawExchange(s.port, `GET /v1/apps/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`));
    assert.equal(r.status, 431);
    assert.equal(r.body.error.code, 'headers_too_large');
  });

  test("a request without Host (HTTP/1.1): 400 with the error object, a request id and a log line, not node's empty 400", async () => {
    const lines: string[] = [];
    const logged = await startTestServer({ logger: pino({ level: 'info' }, { write: (l: string) => void lines.push(l) }) });
    try {
      const r = parseRaw(await rawExchange(logged.port, `GET /v1/apps/${APP}/config HTTP/1.1\r\nAuthorization: Bearer ${KEY}\r\n\r\n`));
      assert.equal(r.status, 400);
      ExactErrorBody.parse(r.body);
      assert.deepEqual([r.body.error.type, r.body.error.param, r.body.error.code], ['invalid_request_error', 'Host', 'missing_parameter']);
      const id = r.headers['x-request-id']!;
      assert.match(id, /^req_[0-9a-f]{24}$/);
      await logged.close(); // the log line is written when the response closes
      assert.ok(
        lines.some((l) => l.includes(id) && l.includes('"status":400')),
        'one log line with the request id',
      );
      // HTTP/1.0 has no Host requirement.
      const old = parseRaw(await rawExchange(s.port, `GET /v1/apps/${APP}/config HTTP/1.0\r\nAuthorization: Bearer ${KEY}\r\n\r\n`));
      assert.equal(old.status, 200);
    } finally {
      await logged.close();
    }
  });

  test("an Expect header other than 100-continue: 417 with the error object and a request id, not node's empty 417", async () => {
    const r = parseRaw(
      await rawExchange(s.port, `GET /v1/apps/${APP}/config HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nAuthorization: Bearer ${KEY}\r\n\r\n`),
    );
    assert.equal(r.status, 417);
    ExactErrorBody.parse(r.body);
    assert.deepEqual([r.body.error.type, r.body.error.param, r.body.error.code], ['invalid_request_error', 'Expect', 'expectation_failed']);
    assert.match(r.headers['x-request-id']!, /^req_[0-9a-f]{24}$/);
    assert.equal(r.headers.connection, 'close', 'the client may be holding its body back');
  });

  test('Expect: 100-continue still works: 100 first, then the body is read and answered', async () => {
    const body = JSON.stringify({ title: 'continued' });
    const socket = net.connect(s.port, '127.0.0.1');
    socket.setEncoding('utf8');
    let out = '';
    let sent = false;
    const answered = new Promise<string>((resolve, reject) => {
      socket.on('data', (d: string) => {
        out += d;
        // The body goes only once the server asked for it.
        if (!sent && out.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
          sent = true;
          socket.write(body);
        }
        if (sent && out.includes('}') && out.endsWith('}')) resolve(out);
      });
      socket.on('error', reject);
    });
    socket.write(
      `POST /v1${conv} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    const text = await answered;
    socket.destroy();
    const r = parseRaw(text.slice(text.indexOf('\r\n\r\n') + 4));
    assert.equal(r.status, 200);
    assert.equal(r.body.title, 'continued');
  });

  test('over-long headers get 431 with a JSON error object', async () => {
    const r = parseRaw(await rawExchange(s.port, `GET /v1/apps HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
    assert.equal(r.status, 431);
    ExactErrorBody.parse(r.body);
    assert.deepEqual([r.body.error.type, r.body.error.code], ['invalid_request_error', 'headers_too_large']);
    assert.match(r.headers['x-request-id']!, /^req_/);
  });
});

describe('bodies no handler reads (D-2)', () => {
  const BIG = 50 * 1024 * 1024;

  /** Reads one whole response (head and Content-Length body) from `socket`, leaving what follows. */
  function nextResponse(
    socket: net.Socket,
    state: { buf: string },
  ): Promise<{ status: number; headers: Record<string, string>; body: any }> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const end = state.buf.indexOf('\r\n\r\n');
        if (end === -1) return;
        const length = Number(/content-length: (\d+)/i.exec(state.buf.slice(0, end))![1]);
        if (state.buf.length < end + 4 + length) return;
        const text = state.buf.slice(0, end + 4 + length);
        state.buf = state.buf.slice(end + 4 + length);
        socket.off('data', onData);
        socket.off('error', reject);
        resolve(parseRaw(text));
      };
      const onData = (d: string) => {
        state.buf += d;
        check();
      };
      socket.on('data', onData);
      socket.on('error', reject);
      check();
    });
  }

  function connect(): { socket: net.Socket; state: { buf: string }; closed: Promise<void> } {
    const socket = net.connect(s.port, '127.0.0.1');
    socket.setEncoding('utf8');
    socket.on('error', () => {}); // a write after the server closed: expected here
    return { socket, state: { buf: '' }, closed: new Promise((r) => socket.once('close', () => r())) };
  }

  for (const [what, method, path, auth, status] of [
    ['an unauthenticated request (401)', 'POST', `/v1/apps/${APP}/conversations`, false, 401],
    ['GET /config (200)', 'GET', `/v1/apps/${APP}/config`, true, 200],
    ['DELETE of a missing conversation (404)', 'DELETE', `/v1${conv}/conv_missing`, true, 404],
  ] as const) {
    test(`a 50 MiB text/plain body declared on ${what}: answered with Connection: close, and the socket closed rather than drained`, {
      timeout: 30_000,
    }, async () => {
      const { socket, state, closed } = connect();
      const head = `${method} ${path} HTTP/1.1\r\nHost: x\r\n${auth ? `Authorization: Bearer ${KEY}\r\n` : ''}Content-Type: text/plain\r\nContent-Length: ${BIG}\r\n\r\n`;
      socket.write(head + 'x'.repeat(64 * 1024));
      const r = await nextResponse(socket, state);
      assert.equal(r.status, status);
      assert.match(r.headers['x-request-id']!, /^req_/);
      assert.equal(r.headers.connection, 'close');
      // The server closes the socket once the answer is out; it does not wait for the other 49.9 MiB.
      await closed;
    });
  }

  test('a small unread body keeps the connection: the next request on it is served', async () => {
    const { socket, state } = connect();
    const get = `GET /v1/apps/${APP}/config HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\n0123456789`;
    socket.write(get + get);
    for (let i = 0; i < 2; i++) {
      const r = await nextResponse(socket, state);
      assert.equal(r.status, 200);
      assert.notEqual(r.headers.connection, 'close');
    }
    socket.destroy();
  });

  test('a chunked body nobody reads is drained up to 1 MiB, then its socket is closed', { timeout: 60_000 }, async () => {
    const { socket, state, closed } = connect();
    let open = true;
    void closed.then(() => (open = false));
    socket.write(
      `GET /v1/apps/${APP}/config HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    const answer = nextResponse(socket, state);
    // Keep sending 64 KiB chunks (never the last one) while the socket is open, up to 64 MiB.
    const chunk = `10000\r\n${'x'.repeat(0x10000)}\r\n`;
    let sent = 0;
    while (open && sent < 1024) {
      if (!socket.write(chunk)) await Promise.race([new Promise((r) => socket.once('drain', r)), closed]);
      sent++;
    }
    await closed;
    assert.equal((await answer).status, 200);
    assert.ok(sent < 1024, `the server closed the socket before the client sent all 64 MiB (sent ${sent} chunks)`);
  });
});

describe('x-request-id and failures (D-5)', () => {
  test('every answer carries a distinct request id', async () => {
    const answers = await Promise.all([
      s.call('GET', `/apps/${APP}/config`),
      s.call('GET', `/apps/${APP}/metrics`),
      s.call('GET', conv),
      s.call('POST', conv),
      s.call('GET', '/nowhere'),
    ]);
    const ids = answers.map((r) => r.headers.get('x-request-id'));
    for (const id of ids) assert.match(id ?? '', /^req_[0-9a-f]{24}$/);
    assert.equal(new Set(ids).size, ids.length);
  });

  test('an unexpected failure is 500 internal_error with no internals and the id that is in the log', async () => {
    const lines: string[] = [];
    const failing = await startTestServer({ logger: pino({ level: 'info' }, { write: (l: string) => void lines.push(l) }) });
    try {
      failing.store.putConversation = async () => {
        throw new Error('disk on fire at /secret/path');
      };
      const r = await failing.call('POST', conv);
      assertError(r, 500, 'internal_error', null, null);
      assert.doesNotMatch(JSON.stringify(r.body), /fire|secret|at /);
      const id = r.headers.get('x-request-id')!;
      assert.ok(r.body.error.message.includes(id));
      assert.ok(
        lines.some((l) => l.includes(id) && l.includes('disk on fire')),
        'the log line names the cause and the request id',
      );
    } finally {
      await failing.close();
    }
  });
});

describe('graceful close', () => {
  test('a request in flight while the server closes is answered, with Connection: close', async () => {
    const server = await startTestServer();
    const body = JSON.stringify({ title: 'late' });
    const answered = new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
      const req = http.request(
        server.baseUrl + conv,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body: text }));
        },
      );
      req.on('error', reject);
      // Half the body now: the handler is waiting for the rest when the close begins.
      server.http.server.once('request', () => {
        void server.close();
        req.end(body.slice(5));
      });
      req.flushHeaders();
      req.write(body.slice(0, 5));
    });
    const r = await answered;
    assert.equal(r.status, 200);
    assert.equal(r.connection, 'close');
    assert.equal(JSON.parse(r.body).title, 'late');
    await server.close();
  });
});
