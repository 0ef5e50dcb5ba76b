// The fixtures: teams, keys (SHA-256 hashes only), plans and apps, read once at start-up.
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { StoreError } from './types.ts';

/** D-27: a plan that names no storage quota gets 1 GiB. */
export const DEFAULT_STORAGE_BYTES = 2 ** 30;

const Team = z.object({ id: z.string().min(1), name: z.string() });
const Key = z.object({
  id: z.string().min(1),
  team_id: z.string().min(1),
  type: z.enum(['secret', 'publishable']),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be the lowercase hex SHA-256 of the key'),
});
const Plan = z.object({
  id: z.string().min(1),
  requests_per_minute: z.number().int().positive(),
  requests_per_day: z.number().int().positive(),
  /** D-27: bytes of stored conversations per app (records and histories; soft-deleted ones excluded). */
  storage_bytes: z.number().int().positive().default(DEFAULT_STORAGE_BYTES),
});
/** Agent settings: what §2.8 shows plus what the engines need (not shown by the interface). */
const Agent = z.looseObject({
  active: z.boolean(),
  name: z.string(),
  config: z.looseObject({ primary_color: z.string(), secondary_color: z.string() }),
  instructions: z.string().default(''),
  model: z.string().default('local'),
  knowledge_base: z.string().nullable().default(null),
  forms: z.array(z.string()).default([]),
});
/** An origin as a browser sends it: scheme, host and port only. */
const Origin = z
  .string()
  .regex(/^https?:\/\/[^/\s]+$/, 'must be an origin such as https://shop.example or http://localhost:3000 (no path, no trailing slash)');
/** The embeddable widget of an app (docs/widget.md): who may embed it, and its own limits (D-52). */
const Widget = z.strictObject({
  /** D-53: the pages allowed to embed the widget. */
  origins: z.array(Origin).default([]),
  /** D-50: the host's server signs its users' identities with it (HS256); null: no verified identities. */
  identity_secret: z.string().min(32).nullable().default(null),
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
const App = z.object({
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
const FixturesFile = z.object({
  teams: z.array(Team),
  keys: z.array(Key),
  plans: z.array(Plan),
  apps: z.array(App),
});

export type TeamT = z.infer<typeof Team>;
export type KeyT = z.infer<typeof Key>;
export type PlanT = z.infer<typeof Plan>;
export type AgentT = z.infer<typeof Agent>;
export type AppT = z.infer<typeof App>;
export type WidgetT = z.infer<typeof Widget>;

export interface Fixtures {
  dir: string;
  teams: Map<string, TeamT>;
  keys: KeyT[];
  plans: Map<string, PlanT>;
  apps: Map<string, AppT>;
}

export async function loadFixtures(dir: string): Promise<Fixtures> {
  const file = path.join(path.resolve(dir), 'fixtures.json');
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(file, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new StoreError(file, code ? `cannot be read (${code})` : 'is not valid JSON');
  }
  const parsed = FixturesFile.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new StoreError(file, `${issue.path.join('.')}: ${issue.message}`);
  }
  const f = parsed.data;
  const teams = new Map(f.teams.map((t) => [t.id, t]));
  const plans = new Map(f.plans.map((p) => [p.id, p]));
  const apps = new Map(f.apps.map((a) => [a.id, a]));
  for (const k of f.keys) if (!teams.has(k.team_id)) throw new StoreError(file, `key ${k.id}: unknown team ${k.team_id}`);
  for (const a of f.apps) {
    if (!teams.has(a.team_id)) throw new StoreError(file, `app ${a.id}: unknown team ${a.team_id}`);
    if (!plans.has(a.plan)) throw new StoreError(file, `app ${a.id}: unknown plan ${a.plan}`);
  }
  return { dir: path.resolve(dir), teams, keys: f.keys, plans, apps };
}
