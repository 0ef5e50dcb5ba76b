// The tenants: teams, keys (SHA-256 hashes only), plans and apps, and the registry every layer reads
// them from. Where they are kept is the store's concern (src/store/fixtures.ts reads them from fixtures.json).
import { z } from 'zod';
import { LIMITS } from '../contract/index.ts';
import { Script } from '../contract/scenarios.ts';

/** D-27: a plan that names no storage quota gets 1 GiB. */
export const DEFAULT_STORAGE_BYTES = 2 ** 30;

export const Team = z.object({ id: z.string().min(1), name: z.string() });
export const Key = z.object({
  id: z.string().min(1),
  team_id: z.string().min(1),
  type: z.enum(['secret', 'publishable']),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be the lowercase hex SHA-256 of the key'),
  // D-70: what the control plane keeps of a key beside its hash (the fixtures' keys may omit them).
  name: z.string().default(''),
  /** Prefix, ellipsis and last four characters; null for a key known only by its hash. */
  redacted: z.string().nullable().default(null),
  /** Unix seconds. */
  created_at: z.number().int().nonnegative().default(0),
  created_by: z.object({ id: z.string(), email: z.string() }).nullable().default(null),
  /** Refused from then on (a rolled key's grace period, or a key created with a lifetime). */
  expires_at: z.number().int().nonnegative().nullable().default(null),
  /** Refused at once from then on. */
  revoked_at: z.number().int().nonnegative().nullable().default(null),
  rolled_to: z.string().nullable().default(null),
  /** A secret key's webhook signing secret S, base64 (derived once, at creation: core/api-keys.ts). */
  signing_key: z.string().nullable().default(null),
  /** D-127: a script every request made with the key follows, its id the test id; `set_at` (ms) starts its run anew. */
  scenario: z.object({ script: Script, set_at: z.number().int().nonnegative() }).nullable().default(null),
});
export const Plan = z.object({
  id: z.string().min(1),
  requests_per_minute: z.number().int().positive(),
  requests_per_day: z.number().int().positive(),
  /** D-27: bytes of stored conversations per app (records and histories; soft-deleted ones excluded). */
  storage_bytes: z.number().int().positive().default(DEFAULT_STORAGE_BYTES),
  /** D-29: bytes of one conversation's stored history (4 MiB by default). */
  conversation_bytes: z.number().int().positive().default(LIMITS.conversationBytes),
  /** D-74: credits (the defaults are soft, so that a plan written before D-74 never starts refusing). */
  credits: z
    .strictObject({
      /** Credits each app on the plan brings to its team's balance every month (UTC). */
      monthly_allowance: z.number().nonnegative().default(10_000),
      /** Credits per 1,000 tokens (input and output alike) of a response or a completion. */
      price_per_1k_tokens: z.number().nonnegative().max(1_000_000).default(1),
      /** At a balance of zero or less: `hard` refuses the app's replies (429), `soft` only warns. */
      limit: z.enum(['soft', 'hard']).default('soft'),
    })
    .prefault({}),
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
  /**
   * D-52, D-92: every request counts against its visitor's and its address's minute; messages and
   * conversations against the app's widget budget too, and each visitor and address against its share
   * of the day's budget. The widget's streams, detached replies and storage are capped apart from REST's.
   */
  limits: z
    .strictObject({
      visitor_per_minute: z.number().int().positive().default(20),
      address_per_minute: z.number().int().positive().default(120),
      app_per_minute: z.number().int().positive().default(600),
      app_per_day: z.number().int().positive().default(20_000),
      /** D-92: one visitor's, and one address's, share of `app_per_day`. */
      visitor_per_day: z.number().int().positive().default(200),
      address_per_day: z.number().int().positive().default(2_000),
      /** D-92: the widget's streams open at once, all visitors together and one visitor's. */
      streams: z.number().int().nonnegative().default(32),
      visitor_streams: z.number().int().nonnegative().default(4),
      /** D-92: the widget's replies running with no client (REST has `responses.max_detached`). */
      max_detached: z.number().int().nonnegative().default(8),
      /** D-92: the part of the plan's storage quota past which the widget stores nothing more. */
      storage_share: z.number().gt(0).max(1).default(0.5),
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
  /** Moves whenever the registry changes (D-78): what a consumer derived from an older version is rebuilt. */
  version: number;
}

/** What a registry is made of: the control plane's document (src/core/control.ts) or the fixtures. */
export interface TenantSource {
  version: number;
  teams: TeamT[];
  keys: KeyT[];
  plans: PlanT[];
  apps: AppT[];
}

/**
 * The live registry (D-78): replaced in place when the control plane's document changes, on this
 * instance or another, so that every later request reads the new teams, keys, plans and apps. Those
 * who derive data from it (key hashes, engines, widget budgets) compare `version` and rebuild.
 */
export class TenantRegistry implements Tenants {
  teams = new Map<string, TeamT>();
  keys: KeyT[] = [];
  plans = new Map<string, PlanT>();
  apps = new Map<string, AppT>();
  version = -1;
  private readonly listeners: Array<(r: TenantRegistry) => void> = [];

  constructor(
    readonly dir: string,
    source: TenantSource,
    /** D-107: the fixtures' conversations, made at start-up when the store lacks them (never in the control plane). */
    readonly conversations: readonly SeedConversationT[] = [],
  ) {
    this.replace(source);
  }

  /** Takes `source` if it is newer than what the registry holds. */
  replace(source: TenantSource): void {
    if (source.version <= this.version) return;
    this.teams = new Map(source.teams.map((t) => [t.id, t]));
    this.keys = source.keys;
    this.plans = new Map(source.plans.map((p) => [p.id, p]));
    this.apps = new Map(source.apps.map((a) => [a.id, a]));
    this.version = source.version;
    for (const fn of this.listeners) fn(this);
  }

  onChange(fn: (r: TenantRegistry) => void): void {
    this.listeners.push(fn);
  }
}
