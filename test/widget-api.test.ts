// The widget API (docs/widget.md, D-45…D-59): the publishable key opens a visitor session and reaches
// nothing else; a visitor reaches only their own conversations; identities are verified; origins,
// limits and errors follow the documented rules.
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { ReferenceErrorBody } from '../src/contract/index.ts';
import { VisitorSession } from '../src/contract/widget.ts';
import { ERRORS } from '../src/core/api-errors.ts';
import { signJwt, verifyJwt } from '../src/pipeline/widget-tokens.ts';
import { KEY, TARGET, startTestServer, tempDir, type TestServer } from './support/helpers.ts';
import { postSse } from './support/sse-client.ts';
import { submissionText } from '../widget/form.ts';
import {
  PK,
  SHOP,
  identitySecret,
  originOf,
  serverSecret,
  signIdentity,
  visitor,
  visitorReply,
  widgetCall,
  type WidgetCall,
} from './support/widget.ts';

const GENUI = TARGET.apps.generative_ui!;

/** An error answer as the catalogue builds it: status, type and code of the named entry. */
function assertError(r: { status: number; body: any }, name: keyof typeof ERRORS): void {
  assert.equal(r.status, ERRORS[name].status, JSON.stringify(r.body));
  ReferenceErrorBody.parse(r.body);
  assert.equal(r.body.error.type, ERRORS[name].type);
  assert.equal(r.body.error.code, ERRORS[name].code);
}

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(async () => {
  await server?.close();
});

describe('the publishable key and the REST API (D-6, D-46)', () => {
  test('every /v1/apps/… path refuses the publishable key with 403 access_denied, code publishable_key', async () => {
    const conv = await server.call('POST', '/apps/app_demo/conversations', {});
    const calls: Array<[string, string, unknown?]> = [
      ['GET', '/apps/app_demo/config'],
      ['GET', '/apps/app_demo/metrics'],
      ['GET', '/apps/app_demo/conversations'],
      ['POST', '/apps/app_demo/conversations', {}],
      ['GET', `/apps/app_demo/conversations/${conv.body.id}`],
      ['PATCH', `/apps/app_demo/conversations/${conv.body.id}`, { title: 'x' }],
      ['POST', `/apps/app_demo/conversations/${conv.body.id}`, { message: { content: 'hi' } }],
      ['DELETE', `/apps/app_demo/conversations/${conv.body.id}`],
      ['POST', '/apps/app_demo/completions', { prompt: 'hi' }],
      ['GET', `/apps/${GENUI}/config`],
    ];
    for (const [method, p, body] of calls) assertError(await server.call(method, p, body, { key: PK }), 'publishable_key');
    // A visitor token is no key of the REST API either.
    const v = await visitor(server, 'app_demo');
    assertError(await server.call('GET', '/apps/app_demo/config', undefined, { key: v.token }), 'invalid_api_key');
    // Nothing changed: the conversation is still there, untitled.
    assert.equal((await server.call('GET', `/apps/app_demo/conversations/${conv.body.id}`)).body.title, null);
  });

  test('the widget API refuses the secret key: it must never reach a browser', async () => {
    assertError(await widgetCall(server, 'POST', '/apps/app_demo/visitors', { auth: KEY, body: {} }), 'access_denied');
    assertError(await widgetCall(server, 'GET', '/apps/app_demo/config', { auth: KEY }), 'invalid_visitor_token');
  });
});

describe('visitor sessions (D-48, D-49)', () => {
  test('a visitor creates, continues and reads their own conversation, streamed, and reads the public config', async () => {
    const v = await visitor(server, 'app_demo');
    assert.match(v.visitor_id, /^vis_/);
    assert.equal(v.external_user_id, null);
    VisitorSession.parse({ ...v });
    const config = await widgetCall(server, 'GET', '/apps/app_demo/config', { auth: v.token });
    assert.equal(config.status, 200);
    assert.deepEqual(config.body.agent, { name: 'Parley Assistant', config: { primary_color: '#1f6feb', secondary_color: '#f6f8fa' } });
    const conv = await widgetCall(server, 'POST', '/apps/app_demo/conversations', { auth: v.token, body: {} });
    assert.equal(conv.status, 200);
    assert.equal(conv.body.object, 'conversation');
    const stream = await postSse(
      originOf(server),
      `/widget/v1/apps/app_demo/conversations/${conv.body.id}`,
      { message: { content: 'hello' } },
      { key: v.token, headers: { origin: SHOP } },
    );
    assert.equal(stream.status, 200);
    assert.equal(stream.headers.get('access-control-allow-origin'), SHOP);
    assert.deepEqual([stream.events[0]!.event, stream.events.at(-1)!.event], ['response.created', 'response.completed']);
    assert.ok(stream.events.some((e) => e.event === 'response.output_text.delta'));
    // JSON when asked for.
    const json = await widgetCall(server, 'POST', `/apps/app_demo/conversations/${conv.body.id}`, {
      auth: v.token,
      body: { message: { content: 'thanks' }, stream: false },
    });
    assert.equal(json.body.status, 'completed');
    const read = await widgetCall(server, 'GET', `/apps/app_demo/conversations/${conv.body.id}`, { auth: v.token });
    assert.deepEqual(
      read.body.items.filter((i: any) => i.role === 'user').map((i: any) => i.content[0].text),
      ['hello', 'thanks'],
    );
    // The REST API sees the same conversation, with no user id: the visitor is anonymous.
    const rest = await server.call('GET', `/apps/app_demo/conversations/${conv.body.id}`);
    assert.equal(rest.body.items.length, read.body.items.length);
    assert.equal(rest.body.external_user_id, null);
  });

  test("a second visitor cannot read, continue or even detect the first one's conversation", async () => {
    const first = await visitor(server, 'app_demo');
    const conv = await widgetCall(server, 'POST', '/apps/app_demo/conversations', { auth: first.token, body: {} });
    const second = await visitor(server, 'app_demo');
    assert.notEqual(second.visitor_id, first.visitor_id);
    const read = await widgetCall(server, 'GET', `/apps/app_demo/conversations/${conv.body.id}`, { auth: second.token });
    const unknown = await widgetCall(server, 'GET', '/apps/app_demo/conversations/conv_doesnotexist', { auth: second.token });
    assertError(read, 'not_found');
    assert.equal(read.body.error.message, unknown.body.error.message.replace('conv_doesnotexist', conv.body.id));
    assertError(
      await widgetCall(server, 'POST', `/apps/app_demo/conversations/${conv.body.id}`, {
        auth: second.token,
        body: { message: { content: 'mine now' } },
      }),
      'not_found',
    );
    // A conversation made through the REST API belongs to no visitor.
    const rest = await server.call('POST', '/apps/app_demo/conversations', {});
    assertError(await widgetCall(server, 'GET', `/apps/app_demo/conversations/${rest.body.id}`, { auth: first.token }), 'not_found');
    assert.equal((await server.call('GET', `/apps/app_demo/conversations/${conv.body.id}`)).body.items.length, 0);
  });

  test("resumable responses for a visitor: their own reply resumed from an event and cancelled; another visitor's is 404", async () => {
    const { visitor: first, sent, responseId: id } = await visitorReply(server, 'app_demo', 'Hello');
    assert.match(id, /^resp_/);
    // The browser may read the header (CORS).
    assert.match(sent.headers.get('access-control-expose-headers') ?? '', /parley-response-id/);
    const all = String(sent.body).split('\n\n').filter(Boolean);
    const rest = await widgetCall(server, 'GET', `/apps/app_demo/responses/${id}/events?starting_after=1`, { auth: first.token });
    assert.equal(rest.status, 200);
    assert.deepEqual(
      String(rest.body)
        .split('\n\n')
        .filter(Boolean)
        .map((b) => b.replace(/^id: \d+\n/, '')),
      all.slice(2),
    );
    const cancelled = await widgetCall(server, 'POST', `/apps/app_demo/responses/${id}/cancel`, { auth: first.token, body: {} });
    assert.deepEqual([cancelled.status, cancelled.body.status], [200, 'completed']);
    const second = await visitor(server, 'app_demo');
    assertError(await widgetCall(server, 'GET', `/apps/app_demo/responses/${id}/events`, { auth: second.token }), 'not_found');
    assertError(await widgetCall(server, 'POST', `/apps/app_demo/responses/${id}/cancel`, { auth: second.token, body: {} }), 'not_found');
    // A response of a conversation made through the REST API belongs to no visitor.
    const c = await server.call('POST', '/apps/app_demo/conversations', {});
    const r = await server.call('POST', `/apps/app_demo/conversations/${c.body.id}`, { message: { content: 'Hi' }, stream: false });
    assertError(await widgetCall(server, 'GET', `/apps/app_demo/responses/${r.body.id}/events`, { auth: first.token }), 'not_found');
  });

  test('a token is for its app only; a forged, malformed or missing one is 401', async () => {
    const v = await visitor(server, 'app_demo');
    assertError(await widgetCall(server, 'GET', `/apps/${GENUI}/config`, { auth: v.token }), 'access_denied');
    const [head, body, sig] = v.token.split('.');
    const claims = JSON.parse(Buffer.from(body!, 'base64url').toString());
    const forgedBody = Buffer.from(JSON.stringify({ ...claims, sub: 'vis_someoneelse' })).toString('base64url');
    assertError(
      await widgetCall(server, 'GET', '/apps/app_demo/config', { auth: `${head}.${forgedBody}.${sig}` }),
      'invalid_visitor_token',
    );
    assertError(await widgetCall(server, 'GET', '/apps/app_demo/config', { auth: 'not-a-token' }), 'invalid_visitor_token');
    assertError(await widgetCall(server, 'GET', '/apps/app_demo/config', { auth: null }), 'invalid_visitor_token');
    // alg "none" with no signature.
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${body}.`;
    assertError(await widgetCall(server, 'GET', '/apps/app_demo/config', { auth: none }), 'invalid_visitor_token');
  });

  test('an expired token is refused with its own code, and renews into the same visitor (D-49)', async () => {
    const secret = await serverSecret(server);
    const v = await visitor(server, 'app_demo');
    const conv = await widgetCall(server, 'POST', '/apps/app_demo/conversations', { auth: v.token, body: {} });
    const claims = verifyJwt(v.token, secret.trim())!;
    const now = Math.floor(Date.now() / 1000);
    const expired = signJwt({ ...claims, iat: now - 7200, exp: now - 3600 }, secret.trim());
    assertError(
      await widgetCall(server, 'GET', `/apps/app_demo/conversations/${conv.body.id}`, { auth: expired }),
      'visitor_token_expired',
    );
    const renewed = await visitor(server, 'app_demo', { previous_token: expired });
    assert.equal(renewed.visitor_id, v.visitor_id);
    assert.equal((await widgetCall(server, 'GET', `/apps/app_demo/conversations/${conv.body.id}`, { auth: renewed.token })).status, 200);
    // Past the renewal window, or another app's, or forged: a new visitor.
    const stale = signJwt({ ...claims, iat: now - 40 * 86_400, exp: now - 31 * 86_400 }, secret.trim());
    assert.notEqual((await visitor(server, 'app_demo', { previous_token: stale })).visitor_id, v.visitor_id);
    assert.notEqual((await visitor(server, GENUI, { previous_token: v.token })).visitor_id, v.visitor_id);
    assert.notEqual((await visitor(server, 'app_demo', { previous_token: signJwt(claims, 'x'.repeat(40)) })).visitor_id, v.visitor_id);
  });

  test('tokens and ownership outlive a restart (the secret is kept in the data directory)', async () => {
    const other = await startTestServer({ dataDir: await tempDir() });
    let v: Awaited<ReturnType<typeof visitor>>;
    let conv: WidgetCall;
    try {
      v = await visitor(other, 'app_demo');
      conv = await widgetCall(other, 'POST', '/apps/app_demo/conversations', { auth: v.token, body: {} });
      // Another server's data directory has another secret: its tokens mean nothing here.
      assertError(await widgetCall(server, 'GET', '/apps/app_demo/config', { auth: v.token }), 'invalid_visitor_token');
    } finally {
      await other.close();
    }
    const again = await startTestServer({ dataDir: other.dataDir });
    try {
      assert.equal((await widgetCall(again, 'GET', `/apps/app_demo/conversations/${conv.body.id}`, { auth: v.token })).status, 200);
    } finally {
      await again.close();
    }
  });

  test('the browser sends no user id and no metadata: only the signed identity does (D-50, D-51)', async () => {
    const v = await visitor(server, 'app_demo');
    const r = await widgetCall(server, 'POST', '/apps/app_demo/conversations', { auth: v.token, body: { external_user_id: 'admin' } });
    assertError(r, 'unknown_parameter');
    assert.equal(r.body.error.param, 'external_user_id');
    assertError(
      await widgetCall(server, 'POST', '/apps/app_demo/conversations', { auth: v.token, body: { metadata: { plan: 'gold' } } }),
      'unknown_parameter',
    );
    const conv = await widgetCall(server, 'POST', '/apps/app_demo/conversations', { auth: v.token, body: { title: 'Mine' } });
    assert.equal(conv.body.title, 'Mine');
    assertError(
      await widgetCall(server, 'POST', `/apps/app_demo/conversations/${conv.body.id}`, {
        auth: v.token,
        body: { message: { content: 'hi' }, metadata: { user_name: 'Mallory' } },
      }),
      'unknown_parameter',
    );
  });
});

describe('verified identities (D-50)', () => {
  test("a signed identity sets external_user_id and the agent's metadata, and is the same visitor on every device", async () => {
    const identity = signIdentity('app_demo', { sub: 'user-42', metadata: { user_name: 'Ada' } });
    const v = await visitor(server, 'app_demo', { identity });
    assert.equal(v.external_user_id, 'user-42');
    const conv = await widgetCall(server, 'POST', '/apps/app_demo/conversations', { auth: v.token, body: {} });
    assert.equal(conv.body.external_user_id, 'user-42');
    assert.deepEqual(conv.body.metadata, { user_name: 'Ada' });
    const reply = await widgetCall(server, 'POST', `/apps/app_demo/conversations/${conv.body.id}`, {
      auth: v.token,
      body: { message: { content: 'hello' }, stream: false },
    });
    // The agent got the metadata (as data): the embedded engine greets by name.
    assert.match(reply.body.output[0].content[0].text, /Ada/);
    const rest = await server.call('GET', `/apps/app_demo/conversations?external_user_id=user-42`);
    assert.ok(rest.body.data.some((c: any) => c.id === conv.body.id));
    // Later, elsewhere: a new identity for the same user reaches the same conversation.
    const elsewhere = await visitor(server, 'app_demo', { identity: signIdentity('app_demo', { sub: 'user-42' }) });
    assert.equal(elsewhere.visitor_id, v.visitor_id);
    assert.equal((await widgetCall(server, 'GET', `/apps/app_demo/conversations/${conv.body.id}`, { auth: elsewhere.token })).status, 200);
    // Its token renews as the same verified user, long after the identity itself has expired (D-49).
    const secret = await serverSecret(server);
    const now = Math.floor(Date.now() / 1000);
    const old = signJwt({ ...verifyJwt(v.token, secret)!, iat: now - 7200, exp: now - 3600 }, secret);
    const renewed = await visitor(server, 'app_demo', { previous_token: old });
    assert.deepEqual([renewed.visitor_id, renewed.external_user_id], [v.visitor_id, 'user-42']);
    assert.deepEqual(verifyJwt(renewed.token, secret)!.md, { user_name: 'Ada' });
    // Another user is another visitor.
    const bob = await visitor(server, 'app_demo', { identity: signIdentity('app_demo', { sub: 'user-43' }) });
    assertError(await widgetCall(server, 'GET', `/apps/app_demo/conversations/${conv.body.id}`, { auth: bob.token }), 'not_found');
  });

  test('expired, future-dated, forged, unsigned and malformed identities are refused, and nothing is issued', async () => {
    const now = Math.floor(Date.now() / 1000);
    const session = (identity: string, app = 'app_demo') =>
      widgetCall(server, 'POST', `/apps/${app}/visitors`, { auth: PK, body: { identity }, origin: app === 'app_demo' ? SHOP : null });
    assertError(await session(signIdentity('app_demo', { sub: 'u', iat: now - 601 })), 'identity_expired');
    assertError(await session(signIdentity('app_demo', { sub: 'u', iat: now + 3600 })), 'identity_expired');
    assertError(await session(signIdentity('app_demo', { sub: 'u', exp: now - 1 })), 'identity_expired');
    assertError(await session(signJwt({ sub: 'u', iat: now }, 'the-wrong-secret-of-at-least-32-chars')), 'invalid_identity');
    // The secret API key is not the identity secret.
    assertError(await session(signJwt({ sub: 'u', iat: now }, KEY)), 'invalid_identity');
    // Another app's identity secret.
    assertError(await session(signJwt({ sub: 'u', iat: now }, identitySecret(GENUI))), 'invalid_identity');
    const [, body] = signIdentity('app_demo', { sub: 'u' }).split('.');
    assertError(await session(`${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${body}.`), 'invalid_identity');
    assertError(await session(signIdentity('app_demo', { iat: now })), 'invalid_identity');
    assertError(await session(signIdentity('app_demo', { sub: 'u', iat: 'yesterday' })), 'invalid_identity');
    assertError(await session(signIdentity('app_demo', { sub: 'u', metadata: { blob: 'x'.repeat(5000) } })), 'invalid_identity');
    // An app whose widget has no identity secret takes no identities.
    assertError(await session(signIdentity('app_demo', { sub: 'u' }), 'app_stream'), 'invalid_identity');
    const r = await session('garbage');
    assertError(r, 'invalid_identity');
    assert.equal(r.body.error.param, 'identity');
  });
});

describe('origins and CORS (D-53)', () => {
  test('a listed origin is answered with CORS headers, preflight included; another origin is refused', async () => {
    const ok = await widgetCall(server, 'POST', '/apps/app_demo/visitors', { auth: PK, body: {} });
    assert.equal(ok.headers.get('access-control-allow-origin'), SHOP);
    assert.match(ok.headers.get('vary') ?? '', /Origin/);
    assert.match(ok.headers.get('access-control-expose-headers') ?? '', /retry-after/);
    const pre = await widgetCall(server, 'OPTIONS', '/apps/app_demo/conversations/conv_x', {
      headers: { 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), SHOP);
    assert.deepEqual(pre.headers.get('access-control-allow-methods')!.split(', ').sort(), ['GET', 'POST']);
    assert.match(pre.headers.get('access-control-allow-headers')!, /authorization/);

    const evil = 'https://evil.example';
    for (const r of [
      await widgetCall(server, 'POST', '/apps/app_demo/visitors', { auth: PK, body: {}, origin: evil }),
      await widgetCall(server, 'OPTIONS', '/apps/app_demo/visitors', {
        origin: evil,
        headers: { 'access-control-request-method': 'POST' },
      }),
      await widgetCall(server, 'POST', '/apps/app_demo/visitors', { auth: PK, body: {}, origin: 'null' }),
      // An origin of app_demo's is not one of app_stream's.
      await widgetCall(server, 'POST', '/apps/app_stream/visitors', { auth: PK, body: {} }),
    ]) {
      assertError(r, 'origin_not_allowed');
      assert.equal(r.headers.get('access-control-allow-origin'), null);
    }
    // A token taken on a listed origin is refused on another one too.
    const v = await visitor(server, 'app_demo');
    assertError(await widgetCall(server, 'GET', '/apps/app_demo/config', { auth: v.token, origin: evil }), 'origin_not_allowed');
  });

  test("the server's own origin is allowed while the playground is on, and not with --no-playground", async () => {
    const own = originOf(server);
    assert.equal(
      (await widgetCall(server, 'POST', '/apps/app_stream/visitors', { auth: PK, body: {}, origin: own })).headers.get(
        'access-control-allow-origin',
      ),
      own,
    );
    const bare = await startTestServer({ playground: false });
    try {
      assertError(
        await widgetCall(bare, 'POST', '/apps/app_stream/visitors', { auth: PK, body: {}, origin: originOf(bare) }),
        'origin_not_allowed',
      );
      assert.equal((await fetch(`${originOf(bare)}/`)).status, 404);
      assert.equal(bare.playgroundUrl, null);
      // The widget itself is still served.
      assert.equal((await fetch(`${originOf(bare)}/widget.js`)).status, 200);
    } finally {
      await bare.close();
    }
  });

  test('no Origin header (not a browser): the credential and the limits decide', async () => {
    const v = await visitor(server, 'app_stream', {}, null);
    assert.equal((await widgetCall(server, 'GET', '/apps/app_stream/config', { auth: v.token, origin: null })).status, 200);
  });
});

describe('which apps have a widget (D-47, D-54)', () => {
  test("unknown app 404; no widget, another team's, disabled, without an agent: 403", async () => {
    assertError(await widgetCall(server, 'POST', '/apps/app_nope/visitors', { auth: PK, body: {} }), 'not_found');
    assertError(await widgetCall(server, 'POST', '/apps/app_other/visitors', { auth: PK, body: {} }), 'widget_disabled');
    assertError(await widgetCall(server, 'POST', '/apps/app_noagent/visitors', { auth: PK, body: {} }), 'widget_disabled');
    assertError(await widgetCall(server, 'POST', '/apps/app_inactive/visitors', { auth: PK, body: {} }), 'app_inactive');
    assertError(
      await widgetCall(server, 'POST', '/apps/app_demo/visitors', { auth: 'pk_live_unknown_0000000000000000000000000000', body: {} }),
      'invalid_api_key',
    );
    assertError(await widgetCall(server, 'GET', '/apps/app_demo/nothing', { auth: PK }), 'not_found');
    const r = await widgetCall(server, 'DELETE', '/apps/app_demo/visitors', { auth: PK });
    assertError(r, 'method_not_allowed');
    assert.equal(r.headers.get('allow'), 'POST');
  });

  test('a body that breaks the rules is a 400 that changes nothing', async () => {
    assertError(await widgetCall(server, 'POST', '/apps/app_demo/visitors', { auth: PK, body: { identity: 42 } }), 'invalid_type');
    assertError(await widgetCall(server, 'POST', '/apps/app_demo/visitors', { auth: PK, body: { user: 'x' } }), 'unknown_parameter');
    const v = await visitor(server, 'app_demo');
    const conv = await widgetCall(server, 'POST', '/apps/app_demo/conversations', { auth: v.token, body: {} });
    assertError(
      await widgetCall(server, 'POST', `/apps/app_demo/conversations/${conv.body.id}`, {
        auth: v.token,
        body: { message: { content: '' } },
      }),
      'invalid_value',
    );
    assert.equal((await widgetCall(server, 'GET', `/apps/app_demo/conversations/${conv.body.id}`, { auth: v.token })).body.items.length, 0);
  });
});

describe('abuse limits (D-52, D-92)', () => {
  test("per visitor, per address and the app's widget budget, apart from the REST plan; a refused request changes nothing", async () => {
    // app_limited: visitor 4/min, address 8/min, widget budget 3/min; its REST plan: 5/min.
    const app = 'app_limited';
    const a = await visitor(server, app); // address 1
    const conv = await widgetCall(server, 'POST', `/apps/${app}/conversations`, { auth: a.token, body: {} }); // address 2, visitor 1, budget 1
    for (let i = 0; i < 2; i++) {
      const r = await widgetCall(server, 'POST', `/apps/${app}/conversations/${conv.body.id}`, {
        auth: a.token,
        body: { message: { content: `m${i}` }, stream: false },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body)); // address 3..4, visitor 2..3, budget 2..3
    }
    // D-92: reading counts against the visitor and the address too.
    assert.equal((await widgetCall(server, 'GET', `/apps/${app}/conversations/${conv.body.id}`, { auth: a.token })).status, 200); // address 5, visitor 4
    const byVisitor = await widgetCall(server, 'GET', `/apps/${app}/config`, { auth: a.token }); // refused: gives address 6 back
    assertError(byVisitor, 'visitor_rate_limit');
    assert.ok(Number(byVisitor.headers.get('retry-after')) >= 1);
    const b = await visitor(server, app); // address 6
    // D-92: a create is charged to the budget, which is spent.
    const refused = await widgetCall(server, 'POST', `/apps/${app}/conversations`, { auth: b.token, body: {} });
    assertError(refused, 'widget_budget');
    // A refused request takes no slot, the address's neither.
    await visitor(server, app); // address 7
    await visitor(server, app); // address 8
    assertError(await widgetCall(server, 'POST', `/apps/${app}/visitors`, { auth: PK, body: {} }), 'address_rate_limit');
    // Refused requests changed nothing: two exchanges, and no conversation for the second visitor.
    const rest = await server.call('GET', `/apps/${app}/conversations/${conv.body.id}`);
    assert.equal(rest.body.items.filter((i: any) => i.role === 'user').length, 2);
    assert.equal((await server.call('GET', `/apps/${app}/metrics`)).body.total_conversations, 1);
    // The team's own backend still has its whole REST plan.
    const created = await server.call('POST', `/apps/${app}/conversations`, {});
    const sent = await server.call('POST', `/apps/${app}/conversations/${created.body.id}`, { message: { content: 'from the backend' } });
    assert.equal(sent.status, 200);
    // 5 a minute: the backend's own create and send took two (D-110), the widget none.
    assert.equal(sent.headers.get('x-ratelimit-remaining-requests'), '3');
    // Other apps' widgets are not affected.
    assert.equal((await widgetCall(server, 'POST', '/apps/app_demo/visitors', { auth: PK, body: {} })).status, 200);
  });
});

describe('generative UI through the widget (D-56)', () => {
  test('a form built by patches, then its submission as the next user turn, which the agent acknowledges', async () => {
    const v = await visitor(server, GENUI);
    const conv = await widgetCall(server, 'POST', `/apps/${GENUI}/conversations`, { auth: v.token, body: {} });
    const asked = await widgetCall(server, 'POST', `/apps/${GENUI}/conversations/${conv.body.id}`, {
      auth: v.token,
      body: { message: { content: 'I need a contact form' }, stream: false },
    });
    assert.ok(asked.body.output.some((o: any) => o.type === 'data_spec'));
    const form = submissionText(
      {
        title: 'Contact us',
        fields: [
          { name: 'name', label: 'Full name', type: 'text', required: true },
          { name: 'phone', label: 'Phone', type: 'tel', required: false },
          { name: 'msg', label: 'Message', type: 'textarea', required: true },
        ],
      },
      { name: 'Ada', phone: ' ', msg: 'two\nlines' },
    );
    assert.equal(form, 'Submitted the form "Contact us":\n- Full name: Ada\n- Phone: (empty)\n- Message: two\n  lines');
    const sent = await widgetCall(server, 'POST', `/apps/${GENUI}/conversations/${conv.body.id}`, {
      auth: v.token,
      body: { message: { content: form }, stream: false },
    });
    // Acknowledged, not answered with the contact form again.
    assert.equal(sent.body.output.length, 1);
    assert.equal(sent.body.output[0].content[0].text, 'Thank you! I received the “Contact us” form with 2 answers.');
  });
});

describe('the widget script and the playground (D-55, D-58)', () => {
  test('GET /widget.js is one script of at most 60 KB gzipped, built from widget/', async () => {
    const res = await fetch(`${originOf(server)}/widget.js`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/javascript/);
    const body = Buffer.from(await res.arrayBuffer());
    const gz = gzipSync(body, { level: 9 }).length;
    assert.ok(gz <= 60 * 1024, `widget.js is ${gz} bytes gzipped`);
    assert.match(body.toString(), /ParleyWidget/);
    // Nothing fetched at run time but the widget API: no other URL in the bundle.
    assert.doesNotMatch(body.toString(), /https?:\/\/(?!www\.w3\.org)[a-z]/i);
  });

  test('the playground at / lists the apps with a widget, under a strict CSP', async () => {
    const res = await fetch(`${originOf(server)}/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-security-policy')!, /script-src 'self'/);
    const html = await res.text();
    assert.match(html, /value="app_demo"/);
    assert.match(html, /value="app_genui"/);
    assert.doesNotMatch(html, /value="app_other"/);
    assert.doesNotMatch(html, /<script>|style=/);
    assert.match(html, new RegExp(PK));
    for (const p of ['/playground.js', '/playground.css']) assert.equal((await fetch(`${originOf(server)}${p}`)).status, 200, p);
    assert.equal(server.playgroundUrl, `${originOf(server)}/`);
    assert.equal((await fetch(`${originOf(server)}/`, { method: 'HEAD' })).headers.get('content-type'), 'text/html; charset=utf-8');
    const post = await fetch(`${originOf(server)}/widget.js`, { method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
  });

  test("a browser's request for /favicon.ico gets an empty 204, not a 404, with or without the playground", async () => {
    const bare = await startTestServer({ playground: false });
    try {
      for (const origin of [originOf(server), originOf(bare)])
        for (const method of ['GET', 'HEAD']) {
          const res = await fetch(`${origin}/favicon.ico`, { method });
          assert.equal(res.status, 204, `${method} ${origin}`);
          assert.equal(await res.text(), '');
          assert.match(res.headers.get('cache-control')!, /max-age=\d+/);
        }
    } finally {
      await bare.close();
    }
  });
});
