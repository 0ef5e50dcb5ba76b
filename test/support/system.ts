// The system packages some proofs need (Debian's chromium, tmux): a proof whose package is missing
// fails with the package to install, on a developer's machine as in CI (.ci/run installs them), unless
// PARLEY_TEST_SKIP_MISSING=1 says to skip it instead.
import { spawnSync } from 'node:child_process';

export const SKIP_MISSING_FLAG = 'PARLEY_TEST_SKIP_MISSING';

/**
 * `false` when `command` runs (`args` answers without side effects); else a skip reason if the flag is
 * set, else throws, which fails the file that needs it with the reason.
 */
export function needSystemTool(command: string, args: string[], debianPackage: string): string | false {
  const r = spawnSync(command, args, { stdio: 'ignore' });
  if (!r.error && r.status === 0) return false;
  const reason = `${command} is missing or does not run (apt-get install ${debianPackage}; .ci/run installs it)`;
  if (process.env[SKIP_MISSING_FLAG] === '1') return `${reason}; skipped: ${SKIP_MISSING_FLAG}=1`;
  throw new Error(`${reason}. Set ${SKIP_MISSING_FLAG}=1 to skip the tests that need it.`);
}
