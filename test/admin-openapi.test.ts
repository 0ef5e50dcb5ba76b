// The admin surface's own document (D-65): GET /admin/v1/openapi.json, a valid OpenAPI 3.2 document
// generated from the zod contract, describing every route of /admin/v1 and nothing else; the answers
// of the server validate against it; /openapi.json stays the data plane's, `servers: /v1`.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { publishedDocuments } from '../src/api/routes.ts';
import { adminClient, bearer, DEMO_ADMIN, TEST_HASH_COST } from './support/admin-client.ts';
import { startTestServer, type TestServer } from './support/helpers.ts';

const doc = publishedDocuments().admin as any;
const DOC_ID = 'https://parley.invalid/admin/v1/openapi.json';
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ ...doc, $id: DOC_ID });
const templateOf = (pattern: string) => pattern.replace(/:(\w+)/g, '{$1}');

/** Asserts that an answer matches what the document gives for its operation and status. */
function conforms(method: string, template: string, status: number, body: unknown): void {
  const op = doc.paths[template]?.[method.toLowerCase()];
  assert.ok(op, `${method} ${template} is not in the document`);
  const response = op.responses[String(status)];
  assert.ok(response, `${method} ${template} answered ${status}, which the document does not list`);
  const pointer = response.$ref
    ? `${response.$ref.slice(1)}/content/application~1json/schema`
    : `/paths/${template.replace(/~/g, '~0').replace(/\//g, '~1')}/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
  const validate = ajv.getSchema(`${DOC_ID}#${pointer}`)!;
  assert.ok(validate(body), `${method} ${template} ${status}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 400)}`);
}

describe('GET /admin/v1/openapi.json (D-65)', () => {
  let server: TestServer;
  let client: ReturnType<typeof adminClient>;
  before(async () => {
    server = await startTestServer({ passwordHashCost: TEST_HASH_COST });
    client = adminClient(new URL(server.baseUrl).origin);
  });
  after(() => server.close());

  test('is a valid OpenAPI 3.2 document, served without a credential; /openapi.json keeps servers /v1 and no admin path', async () => {
    const result = await new Validator().validate(structuredClone(doc));
    assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
    const served = await fetch(`${new URL(server.baseUrl).origin}/admin/v1/openapi.json`);
    assert.equal(served.status, 200);
    assert.deepEqual(await served.json(), doc);
    assert.deepEqual(doc.servers, [{ url: '/admin/v1', description: doc.servers[0].description }]);
    const data = (await (await fetch(`${new URL(server.baseUrl).origin}/openapi.json`)).json()) as any;
    assert.equal(data.servers[0].url, '/v1');
    assert.ok(!Object.keys(data.paths).some((p) => p.includes('admin') || p.startsWith('/members')));
  });

  test('describes every route of /admin/v1, each with its path parameters, and nothing the router lacks', () => {
    const routes = server.adminRoutes.map((r) => `${r.method} ${templateOf(r.pattern)}`);
    const described = Object.entries(doc.paths).flatMap(([path, item]: [string, any]) =>
      Object.keys(item)
        .filter((k) => ['get', 'post', 'put', 'patch', 'delete'].includes(k))
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
    assert.deepEqual(described.filter((d) => d !== 'GET /openapi.json').sort(), [...routes].sort());
    for (const r of server.adminRoutes) {
      const op = doc.paths[templateOf(r.pattern)][r.method.toLowerCase()];
      const names = [...r.pattern.matchAll(/:(\w+)/g)].map((m) => m[1]);
      assert.deepEqual(
        op.parameters?.filter((p: any) => p.in === 'path').map((p: any) => p.name) ?? [],
        names,
        `${r.method} ${r.pattern}: its path parameters`,
      );
      assert.equal(op.security?.length === 0, r.open, `${r.method} ${r.pattern}: open or not`);
      if (r.adminOnly) assert.ok(op.responses['403'], `${r.method} ${r.pattern}: a viewer's 403`);
    }
  });

  test("the server's answers match the document", async () => {
    const s = await client.call('POST', '/sessions', DEMO_ADMIN);
    conforms('POST', '/sessions', 200, s.body);
    const admin = bearer(await client.token(DEMO_ADMIN.email, DEMO_ADMIN.password));
    const get = async (path: string, template = path) =>
      conforms('GET', template, 200, (await client.call('GET', path, undefined, admin)).body);
    for (const path of ['/keys', '/apps', '/members', '/tokens', '/audit', '/credits', '/usage']) await get(path);
    await get('/apps/app_demo', '/apps/{app_id}');
    const seeded = '/apps/app_inactive/conversations/conv_5eed00000000000000000001';
    await get('/apps/app_inactive/conversations?deleted=include', '/apps/{app_id}/conversations');
    await get(seeded, '/apps/{app_id}/conversations/{conversation_id}');
    const notDeleted = await client.call('POST', `${seeded}/restore`, undefined, admin);
    conforms('POST', '/apps/{app_id}/conversations/{conversation_id}/restore', notDeleted.status, notDeleted.body);
    assert.equal(notDeleted.status, 409);
    const added = await client.call('POST', '/members', { email: 'doc@demo.example', role: 'viewer' }, admin);
    conforms('POST', '/members', 200, added.body);
    const app = await client.call('POST', '/apps', { name: 'Doc', widget: { origins: ['https://a.example'] } }, admin);
    conforms('POST', '/apps', 200, app.body);
    const missing = await client.call('PATCH', '/apps/app_other', { name: 'x' }, admin);
    conforms('PATCH', '/apps/{app_id}', 404, missing.body);
    const bad = await client.call('POST', '/members', { email: 'doc@demo.example', role: 'viewer' }, admin);
    conforms('POST', '/members', 409, bad.body);
    const gone = await client.call('DELETE', `/members/${added.body.id}`, undefined, admin);
    conforms('DELETE', '/members/{member_id}', 200, gone.body);
    // Webhooks (D-81, D-87): a loopback endpoint, disabled at once, so that its event is `skipped` and nothing is sent.
    const hook = await client.call(
      'POST',
      '/webhook_endpoints',
      { app_id: 'app_demo', url: 'http://127.0.0.1:9/in', events: ['*'] },
      admin,
    );
    conforms('POST', '/webhook_endpoints', 200, hook.body);
    const hookPath = `/webhook_endpoints/${hook.body.id}`;
    const off = await client.call('PATCH', hookPath, { enabled: false }, admin);
    conforms('PATCH', '/webhook_endpoints/{endpoint_id}', 200, off.body);
    // D-115: POST, the deprecated alias, answers as PATCH does, and the document says it is deprecated.
    const item = doc.paths['/webhook_endpoints/{endpoint_id}'];
    assert.deepEqual([item.patch.deprecated, item.post.deprecated], [undefined, true]);
    assert.equal(
      item.post.requestBody.content['application/json'].schema.$ref,
      item.patch.requestBody.content['application/json'].schema.$ref,
    );
    const alias = await client.call('POST', hookPath, { enabled: false }, admin);
    conforms('POST', '/webhook_endpoints/{endpoint_id}', 200, alias.body);
    assert.deepEqual(alias.body, { ...off.body, updated_at: alias.body.updated_at });
    await get(hookPath, '/webhook_endpoints/{endpoint_id}');
    await get('/webhook_endpoints');
    assert.equal((await server.call('POST', '/apps/app_demo/conversations', {})).status, 200);
    const log = await client.call('GET', `/webhook_deliveries?endpoint_id=${hook.body.id}`, undefined, admin);
    conforms('GET', '/webhook_deliveries', 200, log.body);
    const eventId = log.body.data[0].event_id;
    await get(`/events/${eventId}`, '/events/{event_id}');
    const again = await client.call('POST', `/events/${eventId}/redeliver`, {}, admin);
    conforms('POST', '/events/{event_id}/redeliver', 200, again.body);
    const dropped = await client.call('DELETE', hookPath, undefined, admin);
    conforms('DELETE', '/webhook_endpoints/{endpoint_id}', 200, dropped.body);
  });
});
