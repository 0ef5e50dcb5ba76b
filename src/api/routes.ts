// The routes of the described surfaces in one place: the REST API's (/v1) and the admin surface's
// (src/api/admin/index.ts), and the two OpenAPI documents generated from those same rows
// (src/contract/openapi.ts, admin-openapi.ts), so that a route is declared once and described by its row.
import { ADMIN_OPENAPI_PATH, buildAdminOpenApiDocument } from '../contract/admin-openapi.ts';
import { buildOpenApiDocument, OPENAPI_PATH } from '../contract/openapi.ts';
import type { RouteDef } from '../http/router.ts';
import type { CompletionService } from '../services/completions.ts';
import type { ConversationService } from '../services/conversations.ts';
import type { ResponseService } from '../services/send/responses.ts';
import type { TestRunService } from '../services/test-runs.ts';
import type { Store } from '../store/types.ts';
import { type AdminServices, adminRoutes } from './admin/index.ts';
import { appRoutes } from './apps.ts';
import { conversationRoutes } from './conversations.ts';
import { responseRoutes } from './responses.ts';
import { testRunRoutes } from './test-runs.ts';
import type { AdminRoute, RestRoute } from './rows.ts';

export interface RestServices {
  conversations: ConversationService;
  responses: ResponseService;
  completions: CompletionService;
  store: Store;
  testRuns: TestRunService;
}

/** Every route of /v1, in the order the document gives them. */
export function restRoutes(s: RestServices): RouteDef<RestRoute>[] {
  return [...conversationRoutes(s.conversations), ...responseRoutes(s), ...appRoutes(s.store), ...testRunRoutes(s.testRuns)];
}

/** The pages of the two documents, built once from the rows as mounted. */
export function openApiPages(rest: RouteDef<RestRoute>[], admin: RouteDef<AdminRoute>[]): Array<[string, () => Promise<unknown>]> {
  let data: unknown;
  let control: unknown;
  return [
    [OPENAPI_PATH, async () => (data ??= buildOpenApiDocument(rest))],
    [ADMIN_OPENAPI_PATH, async () => (control ??= buildAdminOpenApiDocument(admin))],
  ];
}

/** A service no handler reaches: describing a route never calls it. */
const UNREACHED = new Proxy(
  {},
  {
    get: () => () => {
      throw new Error('a route was called while only being described');
    },
  },
) as never;

/** The rows without services, to describe them outside a server (`npm run docs`, the tests). */
export function describedRoutes(): { rest: RouteDef<RestRoute>[]; admin: RouteDef<AdminRoute>[] } {
  const u = UNREACHED;
  // Every service is one no handler reaches; the webhooks are there, so that their routes are described.
  const given: Partial<AdminServices> = { webhooks: { endpoints: u, live: u }, publicUrl: null };
  const admin = new Proxy(given, { get: (t, name: string) => (name in t ? t[name as keyof AdminServices] : u) }) as AdminServices;
  return { rest: restRoutes(new Proxy({}, { get: () => u }) as RestServices), admin: adminRoutes(admin) };
}

/** The documents as served, generated from the rows. */
export function publishedDocuments(): { data: Record<string, unknown>; admin: Record<string, unknown> } {
  const { rest, admin } = describedRoutes();
  return { data: buildOpenApiDocument(rest), admin: buildAdminOpenApiDocument(admin) };
}
