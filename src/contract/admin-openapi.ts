// The admin surface's own OpenAPI document (docs/control-plane.md, D-65), served at
// `GET /admin/v1/openapi.json`: one operation per route of `/admin/v1`, every schema from the zod
// contract (admin.ts) through z.toJSONSchema, every operation from its route row (src/api/admin/*.ts).
// `/openapi.json` stays the data plane's (`servers: /v1`), which generated clients use.
import { z } from 'zod';
import { type AdminOperation, REQUESTS, RESPONSES, STATUSES, type Status } from './admin-components.ts';
import type { DescribedRoute } from './openapi.ts';
import { componentIdOf } from './openapi-schemas.ts';
import { INTERFACE_VERSION } from './limits.ts';

type Json = Record<string, unknown>;

export const ADMIN_OPENAPI_PATH = '/admin/v1/openapi.json';

const ref = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });

function schemasOf(named: Record<string, z.ZodType>, io: 'input' | 'output'): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(named)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io,
    uri: (id) => `#/components/schemas/${id}`,
    unrepresentable: 'any',
  });
  return Object.fromEntries(
    Object.entries(schemas).map(([id, s]) => {
      const { $schema: _s, $id: _i, ...rest } = s as Json;
      return [id, rest];
    }),
  );
}

function queryParameters(q: z.ZodObject): Json[] {
  return Object.entries(q.shape).map(([name, schema]) => {
    const { $schema: _s, ...js } = z.toJSONSchema(schema as z.ZodType, { io: 'input', unrepresentable: 'any' }) as Json;
    return { name, in: 'query', required: false, schema: js };
  });
}

/** An SSE answer: each item an event named `event` whose `data` line is JSON of its schema (D-88). */
function eventStreamOf(events: Record<string, string>): Json {
  return {
    itemSchema: {
      type: 'object',
      required: ['event', 'data'],
      oneOf: Object.entries(events).map(([event, schema]) => ({
        properties: { event: { const: event }, data: { type: 'string', contentMediaType: 'application/json', contentSchema: ref(schema) } },
      })),
    },
  };
}

function operationObject(method: string, pattern: string, op: AdminOperation): Json {
  const params = [...pattern.matchAll(/:(\w+)/g)].map((m) => m[1]!);
  const statuses = new Set<Status>(op.extra);
  if (op.body || op.query) statuses.add('400');
  if (!op.open) statuses.add('401');
  if (op.adminOnly || (!op.open && method !== 'GET')) statuses.add('403');
  if (params.length > 0) statuses.add('404');
  const content = op.stream ? { 'text/event-stream': eventStreamOf(op.stream) } : { 'application/json': { schema: ref(op.ok) } };
  const responses: Json = { '200': { description: 'Success.', content } };
  for (const s of [...statuses].sort()) responses[s] = { $ref: `#/components/responses/Error${s}` };
  const parameters: Json[] = [
    ...params.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string', minLength: 1 } })),
    ...(op.query ? queryParameters(op.query) : []),
  ];
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(op.deprecated ? { deprecated: true } : {}),
    ...(op.open ? { security: [] } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: ref(componentIdOf(REQUESTS, op.body)) } } } }
      : {}),
    responses,
  };
}

/** The document from the surface's route rows, in their order; `/openapi.json`'s conventions (OpenAPI 3.2, JSON Schema 2020-12). */
export function buildAdminOpenApiDocument(routes: readonly DescribedRoute<AdminOperation>[]): Json {
  const paths: Record<string, Json> = {};
  for (const { method, pattern, route } of routes) {
    const item = (paths[pattern.replace(/:(\w+)/g, '{$1}')] ??= {});
    item[method.toLowerCase()] = operationObject(method, pattern, route);
  }
  paths['/openapi.json'] = {
    get: {
      operationId: 'getAdminOpenApiDocument',
      summary: 'This document',
      security: [],
      responses: { '200': { description: 'The document.', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
  };
  const responses: Json = {};
  for (const [s, description] of Object.entries(STATUSES))
    responses[`Error${s}`] = {
      description,
      ...(s === '429' || s === '503' ? { headers: { 'Retry-After': { schema: { type: 'string', pattern: '^[0-9]+$' } } } } : {}),
      content: { 'application/json': { schema: ref('Error') } },
    };
  return {
    openapi: '3.2.0',
    info: {
      title: 'Parley admin surface: the control plane',
      version: INTERFACE_VERSION,
      description:
        "A team's members, personal access tokens, API keys, apps and audit log (docs/control-plane.md, D-65…D-79). Never an API key; " +
        'a known path with a method it does not have answers 405 with `Allow` (D-3). Cookie-authenticated writes carry `X-CSRF-Token` (D-67).',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [{ url: '/admin/v1', description: 'D-65: a path space of its own beside /v1 and /widget/v1.' }],
    security: [{ accessToken: [] }, { session: [] }],
    paths,
    components: {
      schemas: { ...schemasOf(RESPONSES, 'output'), ...schemasOf(REQUESTS, 'input') },
      responses,
      securitySchemes: {
        accessToken: { type: 'http', scheme: 'bearer', description: 'D-68: a personal access token `pat_…` (never an API key).' },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'parley_session',
          description: 'D-67: the session cookie of a sign-in; writes also carry `X-CSRF-Token`.',
        },
      },
    },
  };
}
