// Test helpers: a real Parley on 127.0.0.1:0 with a temporary data directory, and a small client.
import { rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import pino from 'pino';
import { freshDatabase, stopPostgres } from './postgres.ts';
import { startParley, type Parley, type ParleyOptions } from '../../src/app.ts';
import { hashPassword, PRODUCTION_COST } from '../../src/services/admin/passwords.ts';
import { DEMO_ADMIN } from './admin-token.ts';

// D-66: the tests lower the password-hash cost, which only a test environment may.
process.env.NODE_ENV = 'test';
/** The test cost of new password hashes (D-66: below production, which tests may); a test server's default. */
export const TEST_HASH_COST = 10;

export const FIXTURES_DIR = path.resolve(import.meta.dirname, '../../fixtures');
/** The fixtures' conformance target file, as read (the suite's tests build Targets from it). */
export const TARGET_JSON = JSON.parse(await fs.readFile(path.join(FIXTURES_DIR, 'target.json'), 'utf8'));
export const TARGET = TARGET_JSON as {
  api_key: string;
  app_id: string;
  publishable_key: string;
  apps: Record<string, string>;
};
export const KEY = TARGET.api_key;
export const OTHER_TEAM_KEY = 'sk_live_other_OzEjiklGc2BegiC04r2ttSM31f09wGs4';
export const APP = TARGET.app_id;

/**
 * The environment addition of a child process whose coverage adds nothing (the CLI, the conformance
 * command: coverage is measured over src/, which the tests run in-process): none is written, which saves
 * each child about a third of its CPU time. Leaving NODE_V8_COVERAGE out is not enough: spawn() copies
 * the parent's value into an environment that lacks it; an empty value turns it off.
 */
export const NO_COVERAGE = { NODE_V8_COVERAGE: '' };

const createdDirs: string[] = [];

/**
 * PARLEY_TEST_STORE=postgres runs a test file's servers on PostgreSQL (a fresh database each,
 * test/support/postgres.ts) instead of the file store: `PARLEY_TEST_STORE=postgres node --import tsx
 * --test test/pagination.test.ts`. Tests of the file store's own layout do not apply there.
 */
export const ON_POSTGRES = process.env.PARLEY_TEST_STORE === 'postgres';
if (ON_POSTGRES) after(stopPostgres);
/** A restart on the same data directory finds the same database. */
const databaseOf = new Map<string, Promise<string>>();
// Each test file runs in its own process: what it created goes with it, whatever the outcome.
process.once('exit', () => {
  for (const dir of createdDirs) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Still mounted or in use: left for the OS's tmp cleaning.
    }
  }
});

/**
 * The fixtures without their conversations (D-107), for tests that read the store's own journal
 * lines, to which a seeded conversation would add one. The other files are the fixtures' own.
 */
export function fixturesWithoutSeeds(): Promise<string> {
  return fixturesEdited((json) => {
    delete json.conversations;
  });
}

/** The fixtures with `edit` made to fixtures.json (an app's limits, say); the other files are the fixtures' own. */
export async function fixturesEdited(edit: (json: Record<string, any>) => void): Promise<string> {
  const dir = await tempDir('parley-fixtures-');
  const json = JSON.parse(await fs.readFile(path.join(FIXTURES_DIR, 'fixtures.json'), 'utf8')) as Record<string, any>;
  edit(json);
  await fs.writeFile(path.join(dir, 'fixtures.json'), JSON.stringify(json));
  for (const name of await fs.readdir(FIXTURES_DIR))
    if (name !== 'fixtures.json') await fs.symlink(path.join(FIXTURES_DIR, name), path.join(dir, name));
  return dir;
}

/**
 * The fixtures with the demo admin's password (README.md's) hashed at `cost`, once per process. At the
 * fixtures' production cost each of its sign-ins, and each unknown email's dummy check (D-66 takes a
 * stored hash's cost), is ~50 ms of scrypt: most of what admin tests spent.
 */
function fixturesHashedAt(cost: number): Promise<string> {
  let dir = fixturesAtCost.get(cost);
  if (!dir) {
    dir = hashPassword(DEMO_ADMIN.password, cost).then((hash) =>
      fixturesEdited((json) => {
        const admin = (json.members as { email: string; password_hash: string }[]).find((m) => m.email === DEMO_ADMIN.email)!;
        admin.password_hash = hash;
      }),
    );
    fixturesAtCost.set(cost, dir);
  }
  return dir;
}
const fixturesAtCost = new Map<number, Promise<string>>();

export async function tempDir(prefix = 'parley-test-'): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  createdDirs.push(dir);
  return dir;
}

export interface TestServer extends Parley {
  dataDir: string;
  /** Calls the API with the demo key (or `key`), JSON in and out. */
  call(
    method: string,
    urlPath: string,
    body?: unknown,
    opts?: { key?: string | null; headers?: Record<string, string>; raw?: string },
  ): Promise<{ status: number; headers: Headers; body: any }>;
}

/**
 * Starts Parley on an ephemeral loopback port with a fresh (or the given) data directory. Passwords are
 * hashed at TEST_HASH_COST unless `passwordHashCost` says otherwise, and the demo admin's fixture hash
 * is made at the same cost unless `fixturesDir` names the fixtures (the production cost's own tests do)
 * or the cost is the production one or above.
 */
export async function startTestServer(opts: ParleyOptions & { dataDir?: string } = {}): Promise<TestServer> {
  const passwordHashCost = opts.passwordHashCost ?? TEST_HASH_COST;
  const fixturesDir = opts.fixturesDir ?? (passwordHashCost >= PRODUCTION_COST ? FIXTURES_DIR : await fixturesHashedAt(passwordHashCost));
  const dataDir = opts.dataDir ?? (await tempDir());
  if (ON_POSTGRES && !databaseOf.has(dataDir)) databaseOf.set(dataDir, freshDatabase());
  const databaseUrl = opts.databaseUrl ?? (ON_POSTGRES ? await databaseOf.get(dataDir) : undefined);
  const parley = await startParley({
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'silent' }),
    ...opts,
    passwordHashCost,
    fixturesDir,
    dataDir,
    databaseUrl,
  });
  const call: TestServer['call'] = async (method, urlPath, body, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    const key = o.key === undefined ? KEY : o.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let payload: string | undefined = o.raw;
    if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(parley.baseUrl + urlPath, { method, headers, body: payload });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON (e.g. an SSE stream): the raw text is the body.
    }
    return { status: res.status, headers: res.headers, body: parsed };
  };
  return Object.assign(parley, { dataDir, call });
}
