// The admin surface (`/admin/v1`, docs/control-plane.md, D-65…D-79): the resources and requests of the
// control plane, described once for the server, the CLI, the dashboard and `/admin/v1/openapi.json`.
// Every field a client may send is checked here; a refusal names its field (D-1).
import { z } from 'zod';
import { ACTOR_TYPES, AUDIT_ACTIONS } from './audit-actions.ts';

const unixSeconds = z.number().int().nonnegative();
const nullableTime = unixSeconds.nullable();

/** A name a person gives (a key's, a token's, an app's): 1 to 100 characters, not only spaces. */
const label = z.string().trim().min(1).max(100);

/**
 * D-172: the one form of an email that is kept and compared: Unicode NFKC (a full-width or ligature
 * lookalike is its plain letters), then lower case (NFKC again: lowering may leave a composable pair).
 */
export function emailKey(email: string): string {
  return email.normalize('NFKC').toLowerCase().normalize('NFKC');
}

/** D-172: control characters (a NUL byte), format ones (zero-width, bidi marks) and line separators. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/** D-66, D-172: a bounded, plain shape (the address is never mailed offline), kept as its `emailKey`. */
export const Email = z
  .string()
  .trim()
  .max(254)
  .refine((s) => !INVISIBLE.test(s), 'email must not contain control or invisible characters (a NUL byte, a zero-width space).')
  .transform(emailKey)
  .refine((s) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s), 'email must be an email address such as ada@example.com.');

/** D-66: 8 to 256 characters, anything else allowed (NIST SP 800-63B: length, no composition rules). */
export const Password = z.string().min(8).max(256);

export const Role = z.enum(['admin', 'viewer']);

/** The list shape of §4.2, used by every admin list (D-75). */
export function listOf<T extends z.ZodType>(item: T) {
  return z.object({
    object: z.literal('list'),
    data: z.array(item),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  });
}

/** A list in that shape: how every admin list answers (D-75); `has_more` is false for a list given whole. */
export function listPage<T extends { id: string }>(data: T[], has_more = false) {
  return { object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more };
}

// ---------------------------------------------------------------------------------------------
// Resources
// ---------------------------------------------------------------------------------------------

export const AdminTeam = z.object({ id: z.string(), object: z.literal('team'), name: z.string() });

/** D-66 */
export const AdminMember = z.object({
  id: z.string(),
  object: z.literal('member'),
  email: z.string(),
  name: z.string().nullable(),
  role: Role,
  created_at: unixSeconds,
  /** False until an invited member has set a password with their one-time link (D-72). */
  password_set: z.boolean(),
  last_sign_in_at: nullableTime,
});

/** D-67: what a sign-in answers (the session id itself only in its cookie). */
export const AdminSession = z.object({
  object: z.literal('session'),
  member: AdminMember,
  team: AdminTeam,
  /** Sent back as `X-CSRF-Token` on every cookie-authenticated write. */
  csrf_token: z.string(),
  expires_at: unixSeconds,
});

/** D-68: a personal access token as listed (never the token itself). */
export const AccessToken = z.object({
  id: z.string(),
  object: z.literal('access_token'),
  name: z.string(),
  redacted: z.string(),
  created_at: unixSeconds,
  expires_at: unixSeconds,
  last_used_at: nullableTime,
});
/** The one answer that shows the token. */
export const AccessTokenCreated = AccessToken.extend({ token: z.string() });

/** D-70: an API key as listed. */
export const ApiKey = z.object({
  id: z.string(),
  object: z.literal('api_key'),
  type: z.enum(['secret', 'publishable']),
  name: z.string(),
  redacted: z.string(),
  created_at: unixSeconds,
  created_by: z.object({ id: z.string(), email: z.string() }).nullable(),
  last_used_at: nullableTime,
  /** Set when the key was rolled (it works until then) or created with an expiry. */
  expires_at: nullableTime,
  revoked_at: nullableTime,
  /** The key that replaced it, when rolled. */
  rolled_to: z.string().nullable(),
});
/** The one answer that shows the key (create, roll). */
export const ApiKeyCreated = ApiKey.extend({ key: z.string() });

/** D-71: an app as the team manages it (the identity secret never in full once set: only `…` and its last four characters). */
export const AdminApp = z.object({
  id: z.string(),
  object: z.literal('app'),
  name: z.string(),
  active: z.boolean(),
  stream: z.boolean(),
  generative_ui: z.boolean(),
  plan: z.string(),
  agent: z.object({
    active: z.boolean(),
    name: z.string(),
    instructions: z.string(),
    model: z.string(),
    knowledge_base: z.string().nullable(),
  }),
  widget: z
    .object({
      origins: z.array(z.string()),
      identity_secret_set: z.boolean(),
      /** D-71: `…` and the secret's last four characters, to tell which one is set; null when none is. */
      identity_secret_redacted: z.string().nullable(),
    })
    .nullable(),
});

/** D-72: what adding a member answers: the one-time set-password link, once, unless a password was given. */
export const AdminMemberAdded = AdminMember.extend({
  invite: z
    .object({
      /** Sent with a new password to `POST /admin/v1/invites/accept`; shown only in this answer. */
      token: z.string(),
      /**
       * The link to pass on (from the public URL, D-65): the dashboard's set-password page with the token
       * in its fragment (`/dashboard#/invite/<token>`); with --no-dashboard, the route the token is sent to.
       */
      accept_url: z.string(),
      expires_at: unixSeconds,
    })
    .nullable(),
});

/** D-75 */
export const AuditEntry = z.object({
  id: z.string(),
  object: z.literal('audit_entry'),
  created_at: unixSeconds,
  /** One of AUDIT_ACTIONS; a string here, so that a client reads an action it does not know yet. */
  action: z.string(),
  actor: z.object({ type: z.enum(ACTOR_TYPES), id: z.string().nullable(), email: z.string().nullable() }),
  address: z.string().nullable(),
  user_agent: z.string().nullable(),
  request_id: z.string().nullable(),
  target: z.object({ type: z.string(), id: z.string() }).nullable(),
  /** Field → [before, after]; never a secret (a key shows its redacted form). */
  changes: z.record(z.string(), z.tuple([z.unknown(), z.unknown()])),
});

/** D-74: the header of a reply let through on a soft-limit plan at zero credits (on /v1 and /widget/v1). */
export const CREDITS_WARNING_HEADER = 'parley-credits-warning';

/** D-74: one app's usage on one UTC day (days without usage are absent). */
export const UsageDay = z.object({
  app_id: z.string(),
  /** The UTC day, `2026-11-25`. */
  date: z.string(),
  /** Responses and completions recorded. */
  requests: z.number().int(),
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  total_tokens: z.number().int(),
  /** Credits debited (usage recorded before D-74 carries none). */
  credits: z.number(),
});
/** D-157: why a request was refused, as the usage report counts it. */
export const RefusalReason = z.enum(['credits', 'rate_limit', 'storage_quota']);
/** D-157: one app's refused requests on one UTC day for one reason (days without any are absent). */
export const RefusedDay = z.object({
  app_id: z.string(),
  date: z.string(),
  /** `credits`: a hard plan at zero (D-74); `rate_limit`: any other 429 (D-23, D-52); `storage_quota`: D-27. */
  reason: RefusalReason,
  requests: z.number().int(),
});
/** D-74: a plan the team's apps are on, as it bills them. */
export const CreditPlan = z.object({
  plan: z.string(),
  /** How many of the team's apps are on it; each brings its allowance. */
  apps: z.number().int(),
  monthly_allowance: z.number(),
  price_per_1k_tokens: z.number(),
  limit: z.enum(['soft', 'hard']),
});
/** D-74: the team's credits this month (UTC). */
export const CreditBalance = z.object({
  object: z.literal('credit_balance'),
  team_id: z.string(),
  /** The credits left: the allowance minus this month's debits (below zero by at most the replies that ran on). */
  credits: z.number(),
  /** The sum of the monthly allowances of the team's apps' plans. */
  allowance: z.number(),
  used: z.number(),
  period_start: unixSeconds,
  /** The first second of the next month, when the allowance comes again. */
  period_end: unixSeconds,
  /** `hard` when some of the team's apps are on a plan that refuses replies at zero. */
  limit: z.enum(['soft', 'hard']),
  plans: z.array(CreditPlan),
});
export const UsageReport = z.object({
  object: z.literal('usage'),
  since: z.string(),
  until: z.string(),
  data: z.array(UsageDay),
  /** D-157: the requests refused for credits, a rate limit or the storage quota, per app, day and reason. */
  refused: z.array(RefusedDay),
  balance: CreditBalance,
});

/** What a removal or a sign-out answers. */
export const AdminDeletion = z.object({ id: z.string().optional(), object: z.string(), deleted: z.literal(true) });

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

export const SignInRequest = z.strictObject({ email: Email, password: z.string().min(1).max(256) });
export const ChangePasswordRequest = z.strictObject({ current_password: z.string().min(1).max(256), new_password: Password });
/** D-72: an invited member sets a password with the one-time token of their link. */
export const SetPasswordRequest = z.strictObject({ token: z.string().min(1).max(200), password: Password });

export const CreateAccessTokenRequest = z.strictObject({
  name: label,
  expires_in_days: z.number().int().min(1).max(365).optional(),
});

/** D-70: a key's lifetime, in seconds (a roll's grace period at most 7 days). */
const SEVEN_DAYS = 7 * 86_400;
/** D-70, D-174: the bounds of a key's lifetime, given at creation or inherited by a rolled key's successor. */
export const KEY_LIFETIME_S = { min: 60, max: 10 * 365 * 86_400 };
export const CreateKeyRequest = z.strictObject({
  type: z.enum(['secret', 'publishable']),
  name: label,
  expires_in_seconds: z.number().int().min(KEY_LIFETIME_S.min).max(KEY_LIFETIME_S.max).optional(),
});
export const RollKeyRequest = z.strictObject({
  expires_in_seconds: z.number().int().min(0).max(SEVEN_DAYS).optional(),
});

const Origin = z.string().regex(/^https?:\/\/[^/\s]+$/, 'must be an origin such as https://shop.example (no path, no trailing slash)');
const AppAgentChange = z.strictObject({
  active: z.boolean().optional(),
  name: label.optional(),
  model: z
    .string()
    .regex(/^(local|(ollama|openai):[A-Za-z0-9._:/-]{1,100})$/, 'must be local, ollama:<model> or openai:<model>')
    .optional(),
  instructions: z.string().max(20_000).optional(),
  knowledge_base: z.string().min(1).max(200).nullable().optional(),
});
const AppWidgetChange = z.strictObject({
  origins: z.array(Origin).max(50).optional(),
  identity_secret: z.string().min(32).max(256).nullable().optional(),
});
export const UpdateAppRequest = z.strictObject({
  name: label.optional(),
  active: z.boolean().optional(),
  stream: z.boolean().optional(),
  generative_ui: z.boolean().optional(),
  plan: z.string().min(1).max(100).optional(),
  agent: AppAgentChange.optional(),
  /** null removes the widget (the publishable key then reaches nothing of the app, D-47). */
  widget: AppWidgetChange.nullable().optional(),
});
export const CreateAppRequest = UpdateAppRequest.extend({ name: label });

/** D-72: without `password`, the answer carries a one-time set-password link. */
export const AddMemberRequest = z.strictObject({ email: Email, role: Role, name: label.optional(), password: Password.optional() });
export const UpdateMemberRequest = z.strictObject({ role: Role });

/** Query values arrive as strings: times are Unix seconds or ISO 8601 dates. */
export const timeParam = z
  .string()
  .refine((s) => /^\d{1,12}$/.test(s) || !Number.isNaN(Date.parse(s)), 'must be Unix seconds or an ISO 8601 date/time')
  .transform((s) => (/^\d+$/.test(s) ? Number(s) : Math.floor(Date.parse(s) / 1000)));
const limitParam = z
  .string()
  .regex(/^[1-9][0-9]{0,2}$/, 'must be an integer from 1 to 100')
  .transform(Number)
  .refine((n) => n <= 100, 'must be an integer from 1 to 100');

/** D-173: a page of a list given in the order its records were made (keys, tokens): `after` an id of it. */
export const PageQuery = z.strictObject({
  limit: limitParam.optional(),
  after: z.string().min(1).max(100).optional(),
});

export const AuditQuery = z.strictObject({
  /** D-75: a known action; a mistyped one is refused, naming them, rather than matching nothing. */
  action: z.enum(AUDIT_ACTIONS, { error: `must be one of ${AUDIT_ACTIONS.join(', ')}` }).optional(),
  since: timeParam.optional(),
  until: timeParam.optional(),
  limit: limitParam.optional(),
  after: z.string().min(1).max(100).optional(),
});

const dateParam = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date such as 2026-11-25')
  .refine((d) => {
    const t = Date.parse(`${d}T00:00:00Z`);
    return !Number.isNaN(t) && new Date(t).toISOString().startsWith(d);
  }, 'must be a date that exists, such as 2026-11-25');
export const UsageQuery = z.strictObject({
  app_id: z.string().min(1).max(100).optional(),
  since: dateParam.optional(),
  until: dateParam.optional(),
});

/** D-73 */
export const AdminConversationsQuery = z.strictObject({
  deleted: z.enum(['exclude', 'include', 'only']).optional(),
  q: z.string().min(1).max(256).optional(),
  external_user_id: z.string().min(1).max(256).optional(),
  limit: limitParam.optional(),
  after: z.string().min(1).max(100).optional(),
  before: z.string().min(1).max(100).optional(),
  order: z.enum(['asc', 'desc']).optional(),
});

export type AdminMemberT = z.infer<typeof AdminMember>;
export type PageQueryT = z.infer<typeof PageQuery>;
export type AdminAppT = z.infer<typeof AdminApp>;
export type AdminMemberAddedT = z.infer<typeof AdminMemberAdded>;
export type UpdateAppRequestT = z.infer<typeof UpdateAppRequest>;
export type ApiKeyT = z.infer<typeof ApiKey>;
export type AuditEntryT = z.infer<typeof AuditEntry>;
export type AccessTokenT = z.infer<typeof AccessToken>;
export type UsageDayT = z.infer<typeof UsageDay>;
export type CreditBalanceT = z.infer<typeof CreditBalance>;
export type UsageReportT = z.infer<typeof UsageReport>;
export type RefusedDayT = z.infer<typeof RefusedDay>;
