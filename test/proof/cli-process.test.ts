// The `parley` CLI as a process (bin/parley.js, or cli/main.ts through tsx): what only a process shows.
// Its --help through the installed executable, a key that never reaches any output even when a server
// echoes it back, `serve` stopped by SIGTERM and run outside a checkout, and the bash completion through
// the installed executable (D-64). test/cli*.test.ts run the rest in-process.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { APP, KEY, NO_COVERAGE, startTestServer, tempDir, type TestServer } from '../support/helpers.ts';
import { BIN, cliEnv, runCli, serverEnv, spawnCli, waitFor, type CliOptions } from '../support/cli-helpers.ts';

let s: TestServer;
let env: Record<string, string>;
before(async () => {
  s = await startTestServer();
  env = serverEnv(s.baseUrl);
});
after(() => s.close());

const run = (args: string[], extra: CliOptions = {}) => runCli(args, { ...extra, env: { ...env, ...extra.env } });

/** Every output of every run in this file, to check that the key never appears in any of them. */
const outputs: string[] = [];
async function runAndKeep(args: string[], extra: CliOptions = {}) {
  const r = await run(args, extra);
  outputs.push(r.stdout, r.stderr);
  return r;
}

describe('the executable', { concurrency: 3 }, () => {
  test('--help through the installed bin lists every command and exits 0', async () => {
    const r = await runAndKeep(['--help'], { via: 'bin' });
    assert.equal(r.code, 0, r.stderr);
    for (const c of ['conversations', 'send', 'chat', 'complete', 'config', 'metrics', 'serve', 'conformance'])
      assert.match(r.stdout, new RegExp(`^  ${c}\\b`, 'm'));
    assert.match(r.stdout, /PARLEY_API_KEY/);
  });

  // The key in use; the one exception to the rule is a new key made by `keys create|roll` (D-79, cli-admin.test.ts).
  test('the key in use is never printed by the process, even when a server echoes it back and with --verbose', async () => {
    // A hostile (or careless) implementation that puts the Authorization header into its error message.
    const echo = http.createServer((req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ error: { type: 'invalid_api_key', message: `bad key: ${req.headers.authorization}`, param: null, code: null } }),
      );
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const port = (echo.address() as AddressInfo).port;
    try {
      // Real processes: everything they print counts, also what would bypass parley's redacting output.
      const r = await runAndKeep(['config', '--verbose', '--base-url', `http://127.0.0.1:${port}/v1`], { via: 'process' });
      assert.equal(r.code, 1);
      assert.match(r.stderr, /bad key: Bearer \[redacted\]/);
      assert.match(r.stderr, /^> authorization: Bearer \[redacted\]$/m);
      const v = await runAndKeep(['conversations', 'list', '--verbose', '--api-key', KEY], {
        env: { PARLEY_API_KEY: undefined },
        via: 'process',
      });
      assert.equal(v.code, 0, v.stderr);
      assert.match(v.stderr, /^> GET /m);
    } finally {
      echo.close();
    }
  });

  test('serve starts the server with the npm start options; SIGTERM stops it cleanly', { timeout: 60_000 }, async (t) => {
    const child = spawnCli(['serve', '--port', '0', '--data-dir', await tempDir(), '--log-level', 'silent'], { via: 'bin' });
    const exited = once(child, 'close');
    // A failed assertion (or the bound) must not leave a server running.
    t.after(() => child.kill('SIGKILL'));
    child.stderr.resume();
    const banner = await waitFor(child.stdout, /listening on (http:\/\/\S+\/v1)/);
    const url = /listening on (http:\/\/\S+\/v1)/.exec(banner)![1]!;
    const r = await runAndKeep(['config', '--json', '--base-url', url]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).app_id, APP);
    child.kill('SIGTERM');
    const [code] = (await exited) as [number];
    assert.equal(code, 0);
  });
});

test('no output of any run above shows the key', () => {
  assert.ok(outputs.length >= 8);
  for (const o of outputs) assert.ok(!o.includes(KEY), `the key appeared in: ${o}`);
});

describe('parley serve outside a checkout (D-64)', () => {
  test('run from an empty folder, it creates no ./data there and names where its data goes', { timeout: 60_000 }, async (t) => {
    const cwd = await tempDir();
    const xdg = await tempDir();
    const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--log-level', 'silent'], {
      cwd,
      env: { ...cliEnv({ XDG_DATA_HOME: xdg }), ...NO_COVERAGE },
      stdio: 'pipe',
    });
    const exited = once(child, 'close');
    t.after(() => child.kill('SIGKILL'));
    const err = { text: '' };
    const noted = waitFor(child.stderr, /data directory: \S+/, err);
    await waitFor(child.stdout, /listening on http:\/\/\S+\/v1/);
    await noted;
    assert.ok(err.text.includes(`data directory: ${path.join(xdg, 'parley')} (this folder is not a Parley checkout`), err.text);
    assert.equal(fs.existsSync(path.join(cwd, 'data')), false);
    assert.equal(fs.existsSync(path.join(xdg, 'parley')), true);
    child.kill('SIGTERM');
    assert.equal(((await exited) as [number])[0], 0);
  });
});

describe('shell completion through the installed parley (D-64)', () => {
  test('the bash script completes through the installed parley', async (t) => {
    if (spawnSync('bash', ['--version']).status !== 0) return t.skip('no bash');
    const dir = await tempDir('parley-bin-');
    await fsp.writeFile(path.join(dir, 'parley'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`, { mode: 0o755 });
    const script = (await run(['completion', 'bash'])).stdout;
    const r = spawnSync(
      'bash',
      ['-c', `${script}\nCOMP_WORDS=(parley conversations li); COMP_CWORD=2; _parley; printf '%s\\n' "\${COMPREPLY[@]}"`],
      {
        env: { ...cliEnv(env), ...NO_COVERAGE, PATH: `${dir}:${process.env.PATH}` },
        encoding: 'utf8',
      },
    );
    assert.equal(r.stdout.trim(), 'list', r.stderr);
    for (const shell of ['zsh', 'fish']) assert.match((await run(['completion', shell])).stdout, /parley __complete/);
    assert.equal((await run(['completion', 'tcsh'])).code, 2);
  });
});
