// The tenant registry read from `fixtures.json` in the fixtures directory, once at start-up.
import fs from 'node:fs/promises';
import path from 'node:path';
import { FixturesFile, type Tenants } from '../core/tenants.ts';
import { DataFileError } from '../core/errors.ts';

export async function loadTenants(dir: string): Promise<Tenants> {
  const file = path.join(path.resolve(dir), 'fixtures.json');
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(file, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new DataFileError(file, code ? `cannot be read (${code})` : 'is not valid JSON');
  }
  const parsed = FixturesFile.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new DataFileError(file, `${issue.path.join('.')}: ${issue.message}`);
  }
  const f = parsed.data;
  const teams = new Map(f.teams.map((t) => [t.id, t]));
  const plans = new Map(f.plans.map((p) => [p.id, p]));
  const apps = new Map(f.apps.map((a) => [a.id, a]));
  for (const k of f.keys) if (!teams.has(k.team_id)) throw new DataFileError(file, `key ${k.id}: unknown team ${k.team_id}`);
  for (const a of f.apps) {
    if (!teams.has(a.team_id)) throw new DataFileError(file, `app ${a.id}: unknown team ${a.team_id}`);
    if (!plans.has(a.plan)) throw new DataFileError(file, `app ${a.id}: unknown plan ${a.plan}`);
  }
  for (const c of f.conversations) if (!apps.has(c.app_id)) throw new DataFileError(file, `conversation ${c.id}: unknown app ${c.app_id}`);
  return { dir: path.resolve(dir), teams, keys: f.keys, plans, apps, conversations: f.conversations };
}
