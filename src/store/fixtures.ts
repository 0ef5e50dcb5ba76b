// The fixtures (`fixtures.json` in the fixtures directory): the seed of a new control plane (D-77), and
// the tenant registry straight from them (tests and tools that run no control plane).
import fs from 'node:fs/promises';
import path from 'node:path';
import { checkReferences, FixturesFile, type FixturesT } from '../core/control.ts';
import { DataFileError } from '../core/errors.ts';
import { TenantRegistry } from '../core/tenants.ts';
import { ScriptBook, type ScriptBookT } from '../contract/scenarios.ts';

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
  const apps = new Set(parsed.data.apps.map((a) => a.id));
  for (const c of parsed.data.conversations)
    if (!apps.has(c.app_id)) throw new DataFileError(file, `conversation ${c.id}: unknown app ${c.app_id}`);
  return parsed.data;
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
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(file, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return {};
    throw new DataFileError(file, code ? `cannot be read (${code})` : 'is not valid JSON');
  }
  const parsed = ScriptBook.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new DataFileError(file, `${issue.path.join('.') || '(top level)'}: ${issue.message}`);
  }
  return parsed.data;
}
