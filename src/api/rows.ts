// What a route row of each described surface carries: its traits (which stages it takes, read by
// src/api/surfaces.ts) and what it says of itself for its surface's OpenAPI document (its operation,
// the schema of its body and the component id of its answer, the statuses its handler adds). The rows
// are the one description of a route: the router mounts them and src/api/routes.ts generates the
// documents from them. A row that reads a body is declared with its surface's `…WithBody` (D-118).
import type { AdminOperation, AdminRequestSchema } from '../contract/admin-components.ts';
import type { RequestSchema, RestOperation } from '../contract/openapi.ts';
import type { Call } from '../http/context.ts';
import type { AdminCaller } from '../core/callers.ts';
import { type Route, withBody } from '../http/surface.ts';

/** A route of the REST API (/v1). */
export type RestRoute = Route & RestOperation;

/** A row of /v1 that reads a body: its handler takes the body its schema parses. */
export const restWithBody = withBody<RestRoute, RequestSchema>();

/** A request on the admin surface once its credential is known (none for signing in). */
export type AdminContext = Omit<Call, 'key' | 'app'> & { admin: AdminCaller };

/** A route of the admin surface (/admin/v1): `open` and `adminOnly` are the traits its credential stage reads (D-65). */
export type AdminRoute = Route<AdminContext> & AdminOperation;

/** A row of /admin/v1 that reads a body: its handler takes the body its schema parses. */
export const adminWithBody = withBody<AdminRoute, AdminRequestSchema>();
