// The tenants: teams, keys (SHA-256 hashes only), plans and apps, and the registry every layer reads
// them from. Where they are kept is the store's concern (src/store/tenants.ts reads them from fixtures.json).
import { z } from 'zod';
import { LIMITS } from '../contract/index.ts';

/** D-27: a plan that names no storage quota gets 1 GiB. */
export const DEFAULT_STORAGE_BYTES = 2 ** 30;

export const Team = z.object({ id: z.string().min(1), name: z.string() });
export const Key = z.object({
  id: z.string().min(1),
  team_id: z.string().min(1),
  type: z.enum(['secret', 'publishable']),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be the lowercase hex SHA-256 of the key'),
});
export const Plan = z.object({
  id: z.string().min(1),
  requests_per_minute: z.number().int().positive(),
  requests_per_day: z.number().int().positive(),
  /** D-27: bytes of stored conversations per app (records and histories; soft-deleted ones excluded). */
  storage_bytes: z.number().int().positive().default(DEFAULT_STORAGE_BYTES),
  /** D-29: bytes of one conversation's stored history (4 MiB by default). */
  conversation_bytes: z.number().int().positive().default(LIMITS.conversationBytes),
});
/** Agent settings: what §2.8 shows plus what the engines need (not shown by the interface). */
export const Agent = z.looseObject({
  active: z.boolean(),
  name: z.string(),
  config: z.looseObject({ primary_color: z.string(), secondary_color: z.string() }),
  instructions: z.string().default(''),
  model: z.string().default('local'),
  knowledge_base: z.string().nullable().default(null),
  forms: z.array(z.string()).default([]),
});
/** An origin as a browser sends it: scheme, host and port only. */
export const Origin = z
  .string()
  .regex(/^https?:\/\/[^/\s]+$/, 'must be an origin such as https://shop.example or http://localhost:3000 (no path, no trailing slash)');
/** The embeddable widget of an app (docs/widget.md): who may embed it, and its own limits (D-52). */
export const Widget = z.strictObject({
  /** D-53: the pages allowed to embed the widget. */
  origins: z.array(Origin).default([]),
  /** D-50: the host's server signs its users' identities with it (HS256); null: no verified identities. */
  identity_secret: z.string().min(32).nullable().default(null),
  /** D-49: how long a visitor token lives, in seconds (an hour; the suite's expired-token case uses a second). */
  token_seconds: z.number().int().positive().default(3600),
  /** D-52: per minute; messages count against all four, sessions and conversations against the visitor's and address's. */
  limits: z
    .strictObject({
      visitor_per_minute: z.number().int().positive().default(20),
      address_per_minute: z.number().int().positive().default(60),
      app_per_minute: z.number().int().positive().default(600),
      app_per_day: z.number().int().positive().default(20_000),
    })
    .prefault({}),
});
export const App = z.object({
  id: z.string().min(1),
  team_id: z.string().min(1),
  name: z.string(),
  plan: z.string().min(1),
  active: z.boolean(),
  stream: z.boolean(),
  generative_ui: z.boolean(),
  agent: Agent,
  /** Resumable responses (docs/responses.md): how long a reply may run, and how many may run with no client (D-34). */
  responses: z
    .strictObject({
      max_duration_seconds: z.number().int().positive().default(600),
      max_detached: z.number().int().nonnegative().default(16),
    })
    .prefault({}),
  /** Absent: the app has no widget, and the publishable key reaches nothing of it (D-47). */
  widget: Widget.optional(),
});
/**
 * D-107: a conversation the fixtures give, made at start-up when the store lacks it: how a disabled
 * app, which takes no create, has one (the conformance target's apps.inactive_conversation).
 */
export const SeedConversation = z.strictObject({
  id: z.string().regex(/^conv_[A-Za-z0-9_-]{3,123}$/, 'must be a conversation id: conv_ and letters, digits, "_" or "-"'),
  app_id: z.string().min(1),
  title: z.string().nullable().default(null),
  external_user_id: z.string().nullable().default(null),
  metadata: z.record(z.string(), z.unknown()).default({}),
});
export const FixturesFile = z.object({
  teams: z.array(Team),
  keys: z.array(Key),
  plans: z.array(Plan),
  apps: z.array(App),
  conversations: z.array(SeedConversation).default([]),
});

export type TeamT = z.infer<typeof Team>;
export type KeyT = z.infer<typeof Key>;
export type PlanT = z.infer<typeof Plan>;
export type AgentT = z.infer<typeof Agent>;
export type AppT = z.infer<typeof App>;
export type WidgetT = z.infer<typeof Widget>;
export type SeedConversationT = z.infer<typeof SeedConversation>;

/** The tenant registry as the layers above the store read it. */
export interface Tenants {
  dir: string;
  teams: Map<string, TeamT>;
  keys: KeyT[];
  plans: Map<string, PlanT>;
  apps: Map<string, AppT>;
  /** D-107: conversations a start makes when the store lacks them. */
  conversations?: readonly SeedConversationT[];
}
