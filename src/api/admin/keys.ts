// The team's API keys on the admin surface (docs/control-plane.md, D-70): listed redacted, created
// and rolled (each shown once), revoked; changes are an admin's.
import { CreateKeyRequest, PageQuery, RollKeyRequest } from '../../contract/admin.ts';
import { parseQuery } from '../../http/context.ts';
import { SetKeyScenarioRequest } from '../../contract/scenarios.ts';
import type { RouteDef } from '../../http/router.ts';
import type { KeyService } from '../../services/admin/keys.ts';
import { type AdminRoute, adminWithBody } from '../rows.ts';
import { originOf } from './common.ts';

export function keyRoutes(keys: KeyService): RouteDef<AdminRoute>[] {
  return [
    {
      method: 'GET',
      pattern: '/keys',
      route: {
        operationId: 'listKeys',
        summary: "D-70, D-173 The team's API keys, redacted, with their last use, a page at a time",
        query: PageQuery,
        ok: 'ApiKeyList',
        handle: async (ctx) => keys.list(ctx.admin, parseQuery(ctx, PageQuery)),
      },
    },
    {
      method: 'POST',
      pattern: '/keys',
      route: adminWithBody({
        operationId: 'createKey',
        summary: 'D-70 A new API key, shown once',
        body: CreateKeyRequest,
        ok: 'ApiKeyCreated',
        adminOnly: true,
        handle: async (ctx, body) => keys.create(ctx.admin, body, originOf(ctx)),
      }),
    },
    {
      method: 'POST',
      pattern: '/keys/:key_id/roll',
      route: adminWithBody({
        operationId: 'rollKey',
        summary: 'D-70 A new key at once; the old one until its grace ends',
        body: RollKeyRequest,
        ok: 'ApiKeyCreated',
        adminOnly: true,
        handle: async (ctx, body) => keys.roll(ctx.admin, ctx.params.key_id!, body.expires_in_seconds, originOf(ctx)),
      }),
    },
    {
      method: 'POST',
      pattern: '/keys/:key_id/revoke',
      route: {
        operationId: 'revokeKey',
        summary: 'D-70 Revoke a key: refused at once',
        ok: 'ApiKey',
        adminOnly: true,
        handle: async (ctx) => keys.revoke(ctx.admin, ctx.params.key_id!, originOf(ctx)),
      },
    },
    {
      method: 'PUT',
      pattern: '/keys/:key_id/scenario',
      route: adminWithBody({
        operationId: 'setKeyScenario',
        summary: 'D-127 A script every request made with the key follows (its id the test id; docs/scenarios.md)',
        body: SetKeyScenarioRequest,
        ok: 'KeyScenario',
        adminOnly: true,
        handle: async (ctx, body) => keys.setScenario(ctx.admin, ctx.params.key_id!, body.script, originOf(ctx)),
      }),
    },
    {
      method: 'DELETE',
      pattern: '/keys/:key_id/scenario',
      route: {
        operationId: 'clearKeyScenario',
        summary: "D-127 The key's requests follow no script any more",
        ok: 'KeyScenario',
        adminOnly: true,
        handle: async (ctx) => keys.setScenario(ctx.admin, ctx.params.key_id!, null, originOf(ctx)),
      },
    },
  ];
}
