// The team's audit log on the admin surface (docs/control-plane.md, D-75): a viewer reads it too.
import { AuditQuery } from '../../contract/admin.ts';
import { parseQuery } from '../../http/context.ts';
import type { RouteDef } from '../../http/router.ts';
import type { AuditService } from '../../services/admin/audit.ts';
import type { AdminRoute } from '../rows.ts';

export function auditRoutes(audit: AuditService): RouteDef<AdminRoute>[] {
  return [
    {
      method: 'GET',
      pattern: '/audit',
      route: {
        operationId: 'listAuditEntries',
        summary: "D-75 The team's audit log, newest first",
        query: AuditQuery,
        ok: 'AuditEntryList',
        handle: async (ctx) => audit.list(ctx.admin, parseQuery(ctx, AuditQuery)),
      },
    },
  ];
}
