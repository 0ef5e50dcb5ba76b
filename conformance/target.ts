// The target file of docs/target.md: what the suite needs to know about an implementation. Every
// problem with it is a UsageError: one line, exit 2.
import fs from 'node:fs/promises';
import { z } from 'zod';
import { CAPABILITIES, CAPABILITY_DEFS, claimsOf, editDistance, unknownCapability, type Capability, type Claims } from './capabilities.ts';
import { TARGET_FORMAT_VERSION } from './version.ts';

export const APP_KEYS = [
  'generative_ui',
  'stream_default',
  'knowledge_base',
  'other_team',
  'inactive',
  'no_agent',
  'rate_limited',
  'inactive_conversation',
  'slow',
  'small_storage',
] as const;
export type AppKey = (typeof APP_KEYS)[number];
/** A target key a case may need: `apps.<name>`, `publishable_key`, `other_team_api_key`, `widget`, `widget.<name>` or `admin`. */
export type TargetKey =
  | `apps.${AppKey}`
  | 'publishable_key'
  | 'other_team_api_key'
  | 'widget'
  | 'admin'
  | 'widget.identity_secret'
  | 'widget.short_token_app';

const TOP_KEYS = [
  'version',
  'base_url',
  'api_key',
  'app_id',
  'capabilities',
  'apps',
  'publishable_key',
  'other_team_api_key',
  'widget',
  'admin',
  'model',
] as const;
const WIDGET_KEYS = ['base_url', 'origin', 'identity_secret', 'short_token_app'] as const;
const ADMIN_KEYS = ['base_url', 'email', 'password'] as const;
/** The format version that introduced a key (the others are version 1's): a target that uses one says so (docs/target.md). */
const SINCE: Record<string, number> = {
  widget: 2,
  admin: 3,
  'apps.inactive_conversation': 4,
  'apps.slow': 4,
  'apps.small_storage': 4,
  'widget.short_token_app': 4,
  capabilities: 4,
  model: 5,
};

const nonEmpty = z.string().min(1);

const TargetFile = z.looseObject({
  version: z.int().min(1).optional(),
  base_url: nonEmpty.optional(),
  api_key: nonEmpty,
  app_id: nonEmpty,
  /** Version 4: Parley's extensions the implementation has (capabilities.ts); absent, they are inferred. */
  capabilities: z.array(z.string()).optional(),
  apps: z
    .looseObject(
      Object.fromEntries(APP_KEYS.map((k) => [k, nonEmpty.nullable().optional()])) as Record<
        AppKey,
        z.ZodOptional<z.ZodNullable<z.ZodString>>
      >,
    )
    .optional(),
  publishable_key: nonEmpty.nullable().optional(),
  /** A secret key of the team that owns apps.other_team (target.md): its conversations must stay out of reach of api_key. */
  other_team_api_key: nonEmpty.nullable().optional(),
  /** The messenger widget's API (docs/widget.md, Parley's extension), for the REFERENCE cases of §5.4. */
  widget: z
    .looseObject({
      base_url: nonEmpty,
      origin: nonEmpty,
      identity_secret: nonEmpty.nullable().optional(),
      short_token_app: nonEmpty.nullable().optional(),
    })
    .nullable()
    .optional(),
  /** Version 5: `replay` when the agent's model is served from tapes (D-146), `live` (the default) otherwise. */
  model: z.enum(['live', 'replay']).optional(),
  /** Version 3: an administrator's sign-in on the control plane (docs/target.md), for the webhook cases (D-80…D-89). */
  admin: z
    .looseObject({
      base_url: nonEmpty.optional(),
      email: nonEmpty,
      password: nonEmpty,
    })
    .nullable()
    .optional(),
});

/** The widget API of the target (D-45…D-54): where it answers, a page origin it allows, and the secret that signs identities. */
export interface WidgetTarget {
  /** Absolute, without a trailing slash: `http://127.0.0.1:8787/widget/v1`. */
  baseUrl: string;
  /** An origin that the main app's widget allows (D-53): `https://shop.example`. */
  origin: string;
  /** The main app's identity secret (D-50), when the target gives it. */
  identitySecret?: string;
  /** An app of the team whose widget allows `origin` and whose visitor tokens expire within seconds (D-49). */
  shortTokenApp?: string;
}

/** The control plane of the target, for an administrator (target format version 3). */
export interface AdminTarget {
  /** Absolute, without a trailing slash: by default base_url's origin and `/admin/v1`. */
  baseUrl: string;
  email: string;
  password: string;
}

export interface Target {
  baseUrl: string;
  apiKey: string;
  appId: string;
  apps: Partial<Record<AppKey, string>>;
  publishableKey?: string;
  otherTeamApiKey?: string;
  widget?: WidgetTarget;
  admin?: AdminTarget;
  /** The capabilities the file declares (`capabilities`), or undefined when it declares none. */
  capabilities?: Capability[];
  /** Which extensions the target claims, declared or inferred (D-105, extended: capabilities). */
  claims: Claims;
  /** Keys of a target written for a newer format version, which this suite ignores (named in the report). */
  ignoredKeys?: string[];
  /** D-146: the agent's model is a replay, so what reaches it must be the same on every run. */
  replay?: boolean;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

export interface TargetOverrides {
  baseUrl?: string;
  apiKey?: string;
  /** Used only when neither the file nor `apiKey` gives a key (PARLEY_API_KEY). */
  fallbackApiKey?: string;
}

/** Keys the file has that this suite does not know: `generativ_ui` → `apps.generativ_ui`. */
function unknownKeys(json: Record<string, unknown>): string[] {
  const out = Object.keys(json).filter((k) => !(TOP_KEYS as readonly string[]).includes(k));
  const nested = (name: string, known: readonly string[]) => {
    const v = json[name];
    if (v && typeof v === 'object' && !Array.isArray(v))
      out.push(
        ...Object.keys(v)
          .filter((k) => !known.includes(k))
          .map((k) => `${name}.${k}`),
      );
  };
  nested('apps', APP_KEYS);
  nested('widget', WIDGET_KEYS);
  nested('admin', ADMIN_KEYS);
  return out;
}

/** The known key nearest to a typo (at most two edits away), for the error message. */
function nearest(key: string): string | undefined {
  const known = [
    ...TOP_KEYS,
    ...APP_KEYS.map((k) => `apps.${k}`),
    ...WIDGET_KEYS.map((k) => `widget.${k}`),
    ...ADMIN_KEYS.map((k) => `admin.${k}`),
  ];
  let best: [string, number] | undefined;
  for (const k of known) {
    const d = editDistance(key, k);
    if (d <= 2 && (!best || d < best[1])) best = [k, d];
  }
  return best?.[0];
}

/** The keys a target gives a value (not null), nested ones as `apps.slow`, `widget.origin`. */
function givenKeys(json: Record<string, unknown>): string[] {
  return Object.entries(json).flatMap(([k, v]) => {
    if (v == null) return [];
    const nested =
      typeof v === 'object' && !Array.isArray(v)
        ? Object.entries(v as Record<string, unknown>)
            .filter(([, x]) => x != null)
            .map(([n]) => `${k}.${n}`)
        : [];
    return [k, ...nested];
  });
}

/** Builds a Target from the file's JSON, with command-line overrides; every problem is a UsageError. */
export function parseTarget(json: unknown, overrides: TargetOverrides = {}, source = 'target'): Target {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new UsageError(`${source}: a target is a JSON object`);
  const withOverrides = { ...(json as object) } as Record<string, unknown>;
  if (overrides.apiKey) withOverrides.api_key = overrides.apiKey;
  else if (withOverrides.api_key === undefined && overrides.fallbackApiKey) withOverrides.api_key = overrides.fallbackApiKey;
  if (withOverrides.api_key === undefined)
    throw new UsageError(`${source}: api_key is missing: pass --api-key KEY or set PARLEY_API_KEY (or add api_key to the file)`);
  const parsed = TargetFile.safeParse(withOverrides);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`${source}: ${issue.path.join('.') || '(file)'}: ${issue.message}`);
  }
  const t = parsed.data;
  // The format's version rule: an unknown key is most often a typo, unless the target follows a newer format.
  const unknown = unknownKeys(withOverrides);
  const version = t.version ?? 1;
  if (unknown.length > 0 && version <= TARGET_FORMAT_VERSION) {
    const hints = unknown.map((k) => (nearest(k) ? `${k} (did you mean ${nearest(k)}?)` : k));
    throw new UsageError(
      `${source}: unknown key${unknown.length > 1 ? 's' : ''} ${hints.join(', ')} in a version ${version} target; a target written for a newer suite says so with "version"`,
    );
  }
  // A key of a later version than the target declares: an older suite would refuse the file, so it must say so.
  const later = givenKeys(withOverrides).filter((k) => (SINCE[k] ?? 1) > version);
  if (later.length > 0) {
    const since = Math.max(...later.map((k) => SINCE[k]!));
    throw new UsageError(
      `${source}: ${later.join(', ')} ${later.length > 1 ? 'are keys' : 'is a key'} of format version ${since}, and the target says version ${version}: add "version": ${since}, so that an older suite ignores ${later.length > 1 ? 'them' : 'it'} instead of refusing the file`,
    );
  }
  const baseUrl = (overrides.baseUrl ?? t.base_url)?.replace(/\/+$/, '');
  if (!baseUrl) throw new UsageError(`${source}: base_url is required (in the file or as --base-url)`);
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new UsageError(`${source}: base_url is not a URL: ${baseUrl}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${source}: base_url must be http(s): ${baseUrl}`);
  // §9: the version is part of the base path.
  if (!url.pathname.endsWith('/v1')) throw new UsageError(`${source}: base_url ${baseUrl} does not end in /v1 (§9)`);
  const apps: Partial<Record<AppKey, string>> = {};
  for (const k of APP_KEYS) {
    const v = t.apps?.[k];
    if (v) apps[k] = v;
  }
  const widget = t.widget ? parseWidget(t.widget, baseUrl, source) : undefined;
  const admin = t.admin ? parseAdmin(t.admin, baseUrl, source) : undefined;
  const capabilities = t.capabilities ? parseCapabilities(t.capabilities, withOverrides, version, unknown, source) : undefined;
  return {
    baseUrl,
    apiKey: t.api_key,
    appId: t.app_id,
    apps,
    publishableKey: t.publishable_key ?? undefined,
    otherTeamApiKey: t.other_team_api_key ?? undefined,
    ...(widget ? { widget } : {}),
    ...(admin ? { admin } : {}),
    ...(capabilities ? { capabilities } : {}),
    claims: claimsOf(capabilities, { widget: widget !== undefined, admin: admin !== undefined }),
    ...(unknown.length > 0 ? { ignoredKeys: unknown } : {}),
    ...(t.model === 'replay' ? { replay: true } : {}),
  };
}

/**
 * D-105, extended (capabilities): each name is one of Parley's extensions, and each declared one has the
 * target keys its cases need, else the run would report as skipped what the target says it implements.
 * A name this suite does not know is a usage error, unless the target follows a newer format (then it
 * is ignored and named, as unknown keys are).
 */
function parseCapabilities(
  names: string[],
  json: Record<string, unknown>,
  version: number,
  ignored: string[],
  source: string,
): Capability[] {
  const known = names.filter((n): n is Capability => (CAPABILITIES as readonly string[]).includes(n));
  const unknownNames = names.filter((n) => !known.includes(n as Capability));
  if (unknownNames.length > 0) {
    if (version <= TARGET_FORMAT_VERSION) throw new UsageError(`${source}: capabilities: ${unknownCapability(unknownNames[0]!)}`);
    ignored.push(...unknownNames.map((n) => `capabilities: ${n}`));
  }
  const given = new Set(givenKeys(json));
  for (const c of known) {
    const missing = CAPABILITY_DEFS[c].keys.find((k) => !given.has(k));
    if (missing)
      throw new UsageError(
        `${source}: capabilities declares ${c}, but the target has no ${missing} key, which its cases need: add ${missing} (docs/target.md) or leave ${c} out of capabilities`,
      );
  }
  return [...new Set(known)];
}

/**
 * `widget.base_url` is absolute, or a reference resolved against base_url as a browser resolves a link
 * (RFC 3986 §5): `/widget/v1` is the widget API on base_url's host, and follows `--base-url`.
 */
function parseWidget(
  w: { base_url: string; origin: string; identity_secret?: string | null; short_token_app?: string | null },
  baseUrl: string,
  source: string,
): WidgetTarget {
  let url: URL;
  try {
    url = new URL(w.base_url, baseUrl);
  } catch {
    throw new UsageError(`${source}: widget.base_url is not a URL: ${w.base_url}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`${source}: widget.base_url must be http(s): ${w.base_url}`);
  if (url.search || url.hash) throw new UsageError(`${source}: widget.base_url has a query or a fragment: ${w.base_url}`);
  const widgetBase = url.href.replace(/\/+$/, '');
  if (widgetBase === baseUrl)
    throw new UsageError(
      `${source}: widget.base_url is base_url itself: the widget API has its own path space (D-45), e.g. ${new URL('/widget/v1', baseUrl).href}`,
    );
  // An origin as a browser sends it (RFC 6454): scheme, host and port; `null` is the one the suite refuses.
  let origin: URL | undefined;
  try {
    origin = new URL(w.origin);
  } catch {
    origin = undefined;
  }
  if (!origin || (origin.protocol !== 'http:' && origin.protocol !== 'https:') || origin.origin !== w.origin) {
    throw new UsageError(
      `${source}: widget.origin must be an origin such as https://shop.example (scheme, host and port; no path, no trailing slash): ${w.origin}`,
    );
  }
  return {
    baseUrl: widgetBase,
    origin: w.origin,
    ...(w.identity_secret ? { identitySecret: w.identity_secret } : {}),
    ...(w.short_token_app ? { shortTokenApp: w.short_token_app } : {}),
  };
}

/**
 * `admin.base_url` is absolute, or resolved against base_url as `widget.base_url` is; without it, the
 * control plane is at base_url's origin and `/admin/v1`.
 */
function parseAdmin(a: { base_url?: string; email: string; password: string }, baseUrl: string, source: string): AdminTarget {
  let url: URL;
  try {
    url = new URL(a.base_url ?? '/admin/v1', baseUrl);
  } catch {
    throw new UsageError(`${source}: admin.base_url is not a URL: ${a.base_url}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`${source}: admin.base_url must be http(s): ${a.base_url}`);
  if (url.search || url.hash) throw new UsageError(`${source}: admin.base_url has a query or a fragment: ${a.base_url}`);
  const adminBase = url.href.replace(/\/+$/, '');
  if (adminBase === baseUrl)
    throw new UsageError(
      `${source}: admin.base_url is base_url itself: the control plane has its own path space, e.g. ${new URL('/admin/v1', baseUrl).href}`,
    );
  if (!/^[^@\s]+@[^@\s]+$/.test(a.email)) throw new UsageError(`${source}: admin.email is not an email address: ${a.email}`);
  return { baseUrl: adminBase, email: a.email, password: a.password };
}

export async function loadTarget(file: string, overrides: TargetOverrides = {}): Promise<Target> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read target file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`target file ${file} is not valid JSON: ${(err as Error).message}`);
  }
  return parseTarget(json, overrides, file);
}

/** The value of a target key, or undefined when the target does not provide it. */
export function targetValue(t: Target, key: TargetKey): string | undefined {
  if (key === 'publishable_key') return t.publishableKey;
  if (key === 'other_team_api_key') return t.otherTeamApiKey;
  if (key === 'widget') return t.widget?.baseUrl;
  if (key === 'admin') return t.admin?.baseUrl;
  if (key === 'widget.identity_secret') return t.widget?.identitySecret;
  if (key === 'widget.short_token_app') return t.widget?.shortTokenApp;
  return t.apps[key.slice(5) as AppKey];
}
