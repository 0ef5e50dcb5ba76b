// D-116: a visitor's resume starts where /v1's would (D-32): Last-Event-ID wins over starting_after,
// a bad one of either is a 400 naming it, and the widget API's preflight lets a page send the header.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestServer, type TestServer } from './support/helpers.ts';
import { visitorReply, widgetCall } from './support/widget.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server?.close());

const blocks = (body: unknown) => String(body).split('\n\n').filter(Boolean);

test('D-116: the widget resumes from Last-Event-ID as /v1 does, the header winning over the query; bad cursors are 400', async () => {
  const { visitor: v, sent, responseId: id } = await visitorReply(server, 'app_demo', 'Hello');
  const path = `/apps/app_demo/responses/${id}/events?starting_after=0`;
  const all = blocks(sent.body);
  assert.ok(all.length > 3, 'a reply of several events');
  const resumed = await widgetCall(server, 'GET', path, { auth: v.token, headers: { 'last-event-id': '2' } });
  assert.equal(resumed.status, 200);
  const events = blocks(resumed.body);
  assert.deepEqual(
    events.map((b) => b.replace(/^id: \d+\n/, '')),
    all.slice(3),
  );
  assert.match(events[0]!, /^id: 3\n/);
  // The same cursor on /v1 (the secret key reads the app's responses) answers the same events.
  const v1 = await server.call('GET', path, undefined, { headers: { 'last-event-id': '2' } });
  assert.deepEqual(blocks(v1.body), events);

  for (const [headers, query, param] of [
    [{ 'last-event-id': 'x' }, '?starting_after=0', 'Last-Event-ID'],
    [{}, '?starting_after=1.5', 'starting_after'],
  ] as const) {
    const bad = await widgetCall(server, 'GET', `/apps/app_demo/responses/${id}/events${query}`, { auth: v.token, headers });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.deepEqual([bad.body.error.code, bad.body.error.param], ['invalid_value', param]);
  }
});

test('D-116: the preflight of a resume allows the Last-Event-ID request header (D-53 revised)', async () => {
  const pre = await widgetCall(server, 'OPTIONS', '/apps/app_demo/responses/resp_x/events', {
    headers: { 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization, last-event-id' },
  });
  assert.equal(pre.status, 204);
  const allowed = pre.headers.get('access-control-allow-headers')!.split(/,\s*/);
  assert.ok(allowed.includes('last-event-id'), allowed.join(', '));
  assert.ok(allowed.includes('authorization'), allowed.join(', '));
});
