// The admin surface's registry (`/admin/v1`, docs/control-plane.md, D-65): every resource of the
// control plane, each one route file of this folder over one service, listed here in the order the
// document gives them. Each answers only its caller's team (another team's id is 404, D-65:
// src/services/admin/team.ts); its stages are declared in src/api/surfaces.ts.
import type { RouteDef } from '../../http/router.ts';
import type { AccountService } from '../../services/admin/accounts.ts';
import type { AppAdminService } from '../../services/admin/apps.ts';
import type { AuditService } from '../../services/admin/audit.ts';
import type { AdminConversationService } from '../../services/admin/conversations.ts';
import type { KeyService } from '../../services/admin/keys.ts';
import type { MemberService } from '../../services/admin/members.ts';
import type { UsageService } from '../../services/admin/usage.ts';
import type { AdminRoute } from '../rows.ts';
import { accountRoutes } from './accounts.ts';
import { appRoutes } from './apps.ts';
import { auditRoutes } from './audit.ts';
import { conversationRoutes } from './conversations.ts';
import { keyRoutes } from './keys.ts';
import { memberRoutes } from './members.ts';
import { usageRoutes } from './usage.ts';
import { type WebhookAdmin, webhookRoutes } from './webhooks.ts';

export const ADMIN_BASE_PATH = '/admin/v1';

/** The services of the admin surface, one per resource. */
export interface AdminServices {
  /** D-67, D-68: sessions and personal access tokens. */
  accounts: AccountService;
  /** D-70 */
  keys: KeyService;
  /** D-75 */
  audit: AuditService;
  /** D-74 */
  usage: UsageService;
  /** D-71 */
  apps: AppAdminService;
  /** D-73 */
  conversations: AdminConversationService;
  /** D-72 */
  members: MemberService;
  /** docs/webhooks.md (none: the store keeps no outbox, and the surface has no webhook routes). */
  webhooks?: WebhookAdmin;
  /** D-65: Parley's public address behind a proxy (links, and cookies' `Secure` when https); null: the request's own. */
  publicUrl: string | null;
}

/** Every route of /admin/v1. */
export function adminRoutes(s: AdminServices): RouteDef<AdminRoute>[] {
  return [
    ...accountRoutes(s.accounts, s.publicUrl?.startsWith('https:') ?? false),
    ...keyRoutes(s.keys),
    ...auditRoutes(s.audit),
    ...usageRoutes(s.usage),
    ...appRoutes(s.apps),
    ...conversationRoutes(s.conversations),
    ...memberRoutes(s.members, s.publicUrl),
    ...(s.webhooks ? webhookRoutes(s.webhooks) : []),
  ];
}
