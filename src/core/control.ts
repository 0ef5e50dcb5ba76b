// The control plane's document (docs/control-plane.md, D-76): the rarely changed part of the service,
// teams, members with their password hashes, API keys, personal access tokens, plans and apps, kept as
// one versioned document. The tenant registry the data plane reads (tenants.ts) is derived from it.
import { z } from 'zod';
import { emailKey } from '../contract/admin.ts';
import { App, Key, Plan, SeedConversation, Team } from './tenants.ts';
import { WebhookEndpoint, type WebhookEndpointT } from './webhook-endpoint.ts';

const seconds = z.number().int().nonnegative();

/** D-66: a member of a team; the email is kept as its `emailKey` and is one member of a team (D-172). */
export const Member = z.object({
  id: z.string().min(1),
  team_id: z.string().min(1),
  email: z.string().min(3),
  name: z.string().nullable().default(null),
  role: z.enum(['admin', 'viewer']),
  created_at: seconds.default(0),
  /** `scrypt$…` (services/admin/passwords.ts); null until an invited member sets one (D-72). */
  password_hash: z.string().nullable().default(null),
  /** D-72: the one-time set-password link's token, as its SHA-256, and when it stops working. */
  invite: z.object({ sha256: z.string(), expires_at: seconds }).nullable().default(null),
  last_sign_in_at: seconds.nullable().default(null),
});

/** The cost (log2 of scrypt's N) a stored `scrypt$<logN>$…` hash was made at (D-66); undefined for a malformed one. */
export function costOf(hash: string): number | undefined {
  const [kind, logN] = hash.split('$');
  const n = Number(logN);
  return kind === 'scrypt' && Number.isInteger(n) && n > 0 ? n : undefined;
}

/** D-68: a personal access token, kept as its SHA-256; its role is its member's. */
export const AccessTokenRecord = z.object({
  id: z.string().min(1),
  member_id: z.string().min(1),
  team_id: z.string().min(1),
  name: z.string(),
  sha256: z.string(),
  redacted: z.string(),
  created_at: seconds,
  expires_at: seconds,
  revoked_at: seconds.nullable().default(null),
});

/** What the fixtures hold: the seed of a new control plane (D-77). */
export const FixturesFile = z.object({
  teams: z.array(Team),
  members: z.array(Member).default([]),
  keys: z.array(Key),
  plans: z.array(Plan),
  apps: z.array(App),
  /** D-107: conversations a start makes when the store lacks them; a data-plane seed, not part of the document. */
  conversations: z.array(SeedConversation).default([]),
});

/** D-76, D-78: the document; `version` moves with every change, on every instance. */
export const ControlDoc = FixturesFile.omit({ conversations: true }).extend({
  version: z.number().int().nonnegative(),
  tokens: z.array(AccessTokenRecord).default([]),
  /** docs/webhooks.md (D-81): each app's webhook endpoints. */
  webhook_endpoints: z.array(WebhookEndpoint).default([]),
});

export type MemberT = z.infer<typeof Member>;
export type AccessTokenRecordT = z.infer<typeof AccessTokenRecord>;
export type FixturesT = z.infer<typeof FixturesFile>;
export type ControlDocT = z.infer<typeof ControlDoc>;

/** The collections of the document that hold records with ids, in the order they refer to each other. */
export const COLLECTIONS = ['teams', 'plans', 'members', 'keys', 'apps', 'tokens', 'webhook_endpoints'] as const;
export type Collection = (typeof COLLECTIONS)[number];

/** What is wrong with a document's references (the first fault), or undefined: every team, plan and member named exists. */
export function checkReferences(
  doc: Omit<ControlDocT, 'version' | 'tokens' | 'webhook_endpoints'> & {
    tokens?: AccessTokenRecordT[];
    webhook_endpoints?: WebhookEndpointT[];
  },
): string | undefined {
  const teams = new Set(doc.teams.map((t) => t.id));
  const plans = new Set(doc.plans.map((p) => p.id));
  const members = new Set(doc.members.map((m) => m.id));
  for (const name of COLLECTIONS) {
    const seen = new Set<string>();
    for (const r of (doc[name] ?? []) as Array<{ id: string }>) {
      if (seen.has(r.id)) return `${name}: ${r.id} appears twice`;
      seen.add(r.id);
    }
  }
  // D-172: an email is one member of a team; across teams it may recur (the oldest with a password signs in).
  const emails = new Set<string>();
  for (const m of doc.members) {
    if (!teams.has(m.team_id)) return `member ${m.id}: unknown team ${m.team_id}`;
    const key = `${m.team_id} ${emailKey(m.email)}`;
    if (emails.has(key)) return `member ${m.id}: email ${m.email} is taken in team ${m.team_id}`;
    emails.add(key);
  }
  for (const k of doc.keys) if (!teams.has(k.team_id)) return `key ${k.id}: unknown team ${k.team_id}`;
  for (const a of doc.apps) {
    if (!teams.has(a.team_id)) return `app ${a.id}: unknown team ${a.team_id}`;
    if (!plans.has(a.plan)) return `app ${a.id}: unknown plan ${a.plan}`;
  }
  for (const t of doc.tokens ?? []) if (!members.has(t.member_id)) return `token ${t.id}: unknown member ${t.member_id}`;
  const apps = new Map(doc.apps.map((a) => [a.id, a.team_id]));
  for (const w of doc.webhook_endpoints ?? [])
    if (apps.get(w.app_id) !== w.team_id) return `webhook endpoint ${w.id}: unknown app ${w.app_id} of team ${w.team_id}`;
  return undefined;
}
