// The fixtures (`fixtures.json` in the fixtures directory): the seed of a new control plane (D-77), and
// the tenant registry derived from a control document (or straight from the fixtures, for tests).
import fs from 'node:fs/promises';
import path from 'node:path';
import { checkReferences, FixturesFile, type FixturesT } from '../core/control.ts';
import { DataFileError } from '../core/errors.ts';
import type { Tenants } from '../core/tenants.ts';

/** Reads and checks `<dir>/fixtures.json`; a fault names the file and the field. */
export async function loadFixtures(dir: string): Promise<FixturesT> {
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
  const fault = checkReferences(parsed.data);
  if (fault) throw new DataFileError(file, fault);
  return parsed.data;
}

/** The registry of `doc`'s teams, keys, plans and apps; `dir` is the fixtures directory (knowledge bases, target.json). */
export function tenantsOf(doc: Pick<FixturesT, 'teams' | 'keys' | 'plans' | 'apps'>, dir: string): Tenants {
  return {
    dir: path.resolve(dir),
    teams: new Map(doc.teams.map((t) => [t.id, t])),
    keys: doc.keys,
    plans: new Map(doc.plans.map((p) => [p.id, p])),
    apps: new Map(doc.apps.map((a) => [a.id, a])),
  };
}

/** The registry straight from the fixtures (tests and tools that run no control plane). */
export async function loadTenants(dir: string): Promise<Tenants> {
  return tenantsOf(await loadFixtures(dir), dir);
}
