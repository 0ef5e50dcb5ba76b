// The fixtures (`fixtures.json` in the fixtures directory): the seed of a new control plane (D-77), and
// the tenant registry straight from them (tests and tools that run no control plane); and the named
// scripts of `scenarios.json` beside it (D-126).
import fs from 'node:fs/promises';
import path from 'node:path';
import type { z } from 'zod';
import { checkReferences, FixturesFile, type FixturesT } from '../core/control.ts';
import { DataFileError } from '../core/errors.ts';
import { TenantRegistry } from '../core/tenants.ts';
import { ScriptBook, type ScriptBookT } from '../contract/scenarios.ts';

/** Reads and checks `<dir>/fixtures.json`; a fault names the file and the field. */
export async function loadFixtures(dir: string): Promise<FixturesT> {
  const file = path.join(path.resolve(dir), 'fixtures.json');
  const fixtures = checked(file, FixturesFile, await readJson(file));
  const fault = checkReferences(fixtures);
  if (fault) throw new DataFileError(file, fault);
  const apps = new Set(fixtures.apps.map((a) => a.id));
  for (const c of fixtures.conversations)
    if (!apps.has(c.app_id)) throw new DataFileError(file, `conversation ${c.id}: unknown app ${c.app_id}`);
  return fixtures;
}

/** A JSON file's value; `missing` when there is no such file, if given. */
async function readJson(file: string, missing?: unknown): Promise<unknown> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && missing !== undefined) return missing;
    throw new DataFileError(file, code ? `cannot be read (${code})` : 'is not valid JSON');
  }
}

/** `raw` as `schema` reads it, or the first fault, naming the file and the field. */
function checked<S extends z.ZodType>(file: string, schema: S, raw: unknown): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new DataFileError(file, `${issue.path.join('.') || '(top level)'}: ${issue.message}`);
}

/** The registry straight from the fixtures (tests and tools that run no control plane). */
export async function loadTenants(dir: string): Promise<TenantRegistry> {
  const fixtures = await loadFixtures(dir);
  return new TenantRegistry(path.resolve(dir), { ...fixtures, version: 0 }, fixtures.conversations);
}

/**
 * D-126: the named scripts of `<dir>/scenarios.json`, checked at start-up (a fault names the file and
 * the script); none when the directory has no such file.
 */
export async function loadScriptBook(dir: string): Promise<ScriptBookT> {
  const file = path.join(path.resolve(dir), 'scenarios.json');
  return checked(file, ScriptBook, await readJson(file, {}));
}
