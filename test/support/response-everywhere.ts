// One response read the three ways a client meets it: the JSON answer of send message, the look-up
// (D-32) and the `response.completed` webhook (D-83), on whichever store the server runs. The proofs
// on both stores (test/response-resource.test.ts, test/proof/pg-response-resource.test.ts) share it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KEY, type TestServer } from './helpers.ts';
import { createEndpoint, demoAdminToken, startReceiver } from './webhook-receiver.ts';

export interface ThreeReadings {
  sent: any;
  looked: any;
  delivered: any;
}

async function call(url: string, method: string, body?: unknown): Promise<any> {
  const r = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await r.json();
  if (r.status !== 200) throw new Error(`${method} ${url} answered ${r.status}: ${JSON.stringify(json)}`);
  return json;
}

/** Sends `content` to a new conversation of `app` (JSON mode) at `baseUrl` and reads its response the three ways. */
export async function readResponseThreeWays(baseUrl: string, app: string, content: string): Promise<ThreeReadings> {
  const origin = new URL(baseUrl).origin;
  const rx = await startReceiver();
  const token = await demoAdminToken(origin);
  const endpoint = await createEndpoint(origin, token, rx.url, ['response.completed'], app);
  try {
    const conv = await call(`${baseUrl}/apps/${app}/conversations`, 'POST', {});
    const sent = await call(`${baseUrl}/apps/${app}/conversations/${conv.id}`, 'POST', { message: { content }, stream: false });
    await rx.waitFor((r) => r.some((x) => x.json?.data?.id === sent.id));
    const delivered = rx.received.find((x) => x.json?.data?.id === sent.id)!.json.data;
    const looked = await call(`${baseUrl}/apps/${app}/responses/${sent.id}`, 'GET');
    return { sent, looked, delivered };
  } finally {
    await fetch(`${origin}/admin/v1/webhook_endpoints/${endpoint}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    await rx.close();
  }
}

/** §2.4's fields of an output item, by type: nothing else may appear (D-83 revised: no stored id or created_at). */
const ITEM_FIELDS: Record<string, string[]> = {
  message: ['content', 'role', 'type'],
  function_call: ['arguments', 'call_id', 'name', 'type'],
  data_spec: ['data', 'type'],
};

/**
 * Each app's reply (every kind of output item between them: a tool call, generative UI, text) reads the
 * same, key for key, in the send's answer, the look-up and the webhook; returns the item types seen.
 */
export async function proveOneResponse(baseUrl: string): Promise<Set<string>> {
  const types = new Set<string>();
  const replies: Array<[string, string]> = [
    ['app_knowledge', 'How do I reset my password?'],
    ['app_genui', 'I want to book an appointment'],
    ['app_demo', 'Hi there'],
  ];
  for (const [app, content] of replies) {
    const { sent, looked, delivered } = await readResponseThreeWays(baseUrl, app, content);
    assert.equal(sent.status, 'completed', app);
    assert.deepEqual(looked, sent, `${app}: GET …/responses/{id} answers what send message answered (D-32)`);
    assert.deepEqual(delivered, sent, `${app}: the response.completed webhook carries what send message answered (D-83)`);
    for (const item of delivered.output) {
      assert.deepEqual(Object.keys(item).sort(), ITEM_FIELDS[item.type], `${app}: a ${item.type} item has §2.4's fields only`);
      types.add(item.type);
    }
  }
  return types;
}

/** Registers the proof on the server `start` gives (one per store), stopped after. */
export function oneResponseEverywhere(store: string, start: () => Promise<TestServer>): void {
  let server: TestServer | undefined;
  before(async () => {
    server = await start();
  });
  after(() => server?.close());
  test(`D-83, D-32 on ${store}: the same response reads the same in the send answer, the look-up and the webhook, items in §2.4 shape`, {
    timeout: 120_000,
  }, async () => {
    const types = await proveOneResponse(server!.baseUrl);
    assert.deepEqual([...types].sort(), ['data_spec', 'function_call', 'message']);
  });
}
