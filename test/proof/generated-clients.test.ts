// Long proof: the published contract is one that generators type. From the live /openapi.json of a
// started server, `@redocly/cli lint` finds nothing to say, openapi-typescript (default flags) and
// @hey-api/openapi-ts generate their clients, and the scripts of test/fixtures/clients/ (create, list,
// rename, send as JSON, send as a stream with typed events, completion, resume), which hold no `as`, `!`
// or `any`, compile with tsc against them and then run against the same server. Everything runs from
// node_modules: no network but loopback.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import ts from 'typescript';
import { KEY, NO_COVERAGE, TARGET, startTestServer, tempDir, type TestServer } from '../support/helpers.ts';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'node_modules/.bin');
const SCRIPTS = path.join(ROOT, 'test/fixtures/clients');
/** No telemetry and no update check: the tools run offline. */
const env = { ...process.env, ...NO_COVERAGE, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };

/** The casts a script must not use: `x as T`, `<T>x`, `x!` and the type `any`. */
function castsIn(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    const at = () => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${node.getText().slice(0, 60)}`;
    if (ts.isAsExpression(node) || ts.isTypeAssertionExpression(node) || ts.isNonNullExpression(node)) found.push(at());
    if (node.kind === ts.SyntaxKind.AnyKeyword) found.push(at());
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('generated clients compile and run against the live document', () => {
  let s: TestServer;
  let dir: string;
  before(async () => {
    s = await startTestServer();
    dir = await tempDir('parley-clients-');
    const res = await fetch(new URL('/openapi.json', s.baseUrl));
    assert.equal(res.status, 200);
    await fs.writeFile(path.join(dir, 'openapi.json'), await res.text());
    // The scripts resolve openapi-fetch, eventsource-parser and tsx from the project's node_modules.
    await fs.symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    await fs.writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  });
  after(() => s.close());

  test('@redocly/cli lint: valid, with no warning', async () => {
    const run = await exec(path.join(BIN, 'redocly'), ['lint', 'openapi.json', '--format=json', '--max-problems=1000'], {
      cwd: dir,
      env,
    }).catch((err: { stdout: string; stderr: string }) => err);
    const report = JSON.parse(run.stdout) as { totals: Record<string, number>; problems: { ruleId: string; message: string }[] };
    assert.deepEqual(
      report.problems.map((p) => `${p.ruleId}: ${p.message}`),
      [],
    );
    assert.deepEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 });
  });

  test('the scripts use no cast: no `as`, `<T>`, `!` or `any`', async () => {
    const names = await fs.readdir(SCRIPTS);
    assert.deepEqual(names.sort(), ['hey-api.ts', 'openapi-fetch.ts']);
    for (const name of names) assert.deepEqual(castsIn(name, await fs.readFile(path.join(SCRIPTS, name), 'utf8')), [], name);
    // The check sees each kind of cast.
    const casts = 'const a = b as string;\nconst c = <string>d;\nconst e = f!;\nlet g: any;\n';
    assert.equal(castsIn('casts.ts', casts).length, 4);
  });

  test('openapi-typescript (default flags) and @hey-api/openapi-ts generate clients the scripts compile against', {
    timeout: 120_000,
  }, async () => {
    await exec(path.join(BIN, 'openapi-typescript'), ['openapi.json', '--output', 'schema.ts'], { cwd: dir, env });
    await exec(
      path.join(BIN, 'openapi-ts'),
      ['--input', 'openapi.json', '--output', 'hey', '--client', '@hey-api/client-fetch', '--no-log-file'],
      {
        cwd: dir,
        env,
      },
    );
    for (const name of ['openapi-fetch.ts', 'hey-api.ts']) await fs.copyFile(path.join(SCRIPTS, name), path.join(dir, name));
    await fs.writeFile(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'ESNext',
          moduleResolution: 'Bundler',
          strict: true,
          noUncheckedIndexedAccess: true,
          allowImportingTsExtensions: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
        },
        files: ['openapi-fetch.ts', 'hey-api.ts'],
      }),
    );
    const compiled = await exec(path.join(BIN, 'tsc'), ['-p', 'tsconfig.json'], { cwd: dir, env }).catch((err: { stdout: string }) => err);
    assert.equal(compiled.stdout, '', 'tsc reported errors');
  });

  for (const script of ['openapi-fetch.ts', 'hey-api.ts']) {
    test(`${script} does what it says against the server`, { timeout: 60_000 }, async () => {
      await fs.access(path.join(dir, script)); // generated and compiled by the test before
      const { stdout } = await exec(process.execPath, ['--import', 'tsx', script], {
        cwd: dir,
        env: { ...env, PARLEY_BASE_URL: s.baseUrl, PARLEY_API_KEY: KEY, PARLEY_APP_ID: TARGET.apps.knowledge_base! },
      });
      const out = JSON.parse(stdout);
      assert.match(out.conversationId, /^conv_/);
      assert.deepEqual(out.metadata, { plan: 'pro', city: 'Québec' });
      assert.equal(out.listed, true);
      assert.equal(out.title, 'Renamed by a generated client');
      assert.equal(out.json.status, 'completed');
      assert.ok(out.json.text.length > 0, 'the JSON reply has text');
      const { stream } = out;
      assert.equal(stream.types[0], 'response.created');
      assert.equal(stream.types.at(-1), 'response.completed');
      assert.equal(stream.status, 'completed');
      assert.match(stream.responseId, /^resp_/);
      assert.deepEqual(stream.calls, ['knowledge_search {"query":"How do I rotate an API key"}']);
      assert.ok(stream.text.length > 0 && stream.deltas === stream.text, 'the deltas add up to the done text');
      assert.equal(out.completion.status, 'completed');
      assert.ok(out.completion.text.length > 0, 'the completion has text');
      // D-32: resumed after the first event, the same events follow.
      assert.deepEqual(out.resumed, stream.types.slice(1));
    });
  }
});
