// The target file of docs/target.md: what the suite needs to know about an implementation.
import fs from 'node:fs/promises';
import { z } from 'zod';

export const APP_KEYS = ['generative_ui', 'stream_default', 'knowledge_base', 'other_team', 'inactive', 'no_agent', 'rate_limited'] as const;
export type AppKey = (typeof APP_KEYS)[number];
/** A target key a case may need: `apps.<name>`, `publishable_key` or `other_team_api_key`. */
export type TargetKey = `apps.${AppKey}` | 'publishable_key' | 'other_team_api_key';

const nonEmpty = z.string().min(1);

export const TargetFile = z.looseObject({
  base_url: nonEmpty.optional(),
  api_key: nonEmpty,
  app_id: nonEmpty,
  apps: z.looseObject(Object.fromEntries(APP_KEYS.map((k) => [k, nonEmpty.nullable().optional()])) as Record<AppKey, z.ZodOptional<z.ZodNullable<z.ZodString>>>).optional(),
  publishable_key: nonEmpty.nullable().optional(),
  /** A secret key of the team that owns apps.other_team (target.md): its conversations must stay out of reach of api_key. */
  other_team_api_key: nonEmpty.nullable().optional(),
});

export interface Target {
  baseUrl: string;
  apiKey: string;
  appId: string;
  apps: Partial<Record<AppKey, string>>;
  publishableKey?: string;
  otherTeamApiKey?: string;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

/** Builds a Target from the file's JSON, with command-line overrides; every problem is a UsageError. */
export function parseTarget(json: unknown, overrides: { baseUrl?: string; apiKey?: string } = {}, source = 'target'): Target {
  const withOverrides = { ...(json as object) } as Record<string, unknown>;
  if (overrides.apiKey) withOverrides.api_key = overrides.apiKey;
  const parsed = TargetFile.safeParse(withOverrides);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`${source}: ${issue.path.join('.') || '(file)'}: ${issue.message}`);
  }
  const t = parsed.data;
  const baseUrl = (overrides.baseUrl ?? t.base_url)?.replace(/\/+$/, '');
  if (!baseUrl) throw new UsageError(`${source}: base_url is required (in the file or as --base-url)`);
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new UsageError(`${source}: base_url is not a URL: ${baseUrl}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${source}: base_url must be http(s): ${baseUrl}`);
  const apps: Partial<Record<AppKey, string>> = {};
  for (const k of APP_KEYS) {
    const v = t.apps?.[k];
    if (v) apps[k] = v;
  }
  return { baseUrl, apiKey: t.api_key, appId: t.app_id, apps, publishableKey: t.publishable_key ?? undefined, otherTeamApiKey: t.other_team_api_key ?? undefined };
}

export async function loadTarget(file: string, overrides: { baseUrl?: string; apiKey?: string } = {}): Promise<Target> {
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
  return t.apps[key.slice(5) as AppKey];
}
