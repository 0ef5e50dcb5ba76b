// Scripts and test runs (docs/scenarios.md, D-125…D-128): a script is a list of steps, each a directive
// list as `Parley-Scenario` takes it, for the 1st, 2nd, … request of one test id; a test run is what
// Parley saw of that test id. One schema of a script serves `fixtures/scenarios.json`, a key's script
// on the admin surface and the CLI.
import { z } from 'zod';

/** The longest step: a directive list is a header value (well under node's 16 KiB of headers). */
export const STEP_MAX_CHARS = 1_000;
/** The most steps of one script. */
export const SCRIPT_MAX_STEPS = 100;

/** One step: a directive list (`status=429;retry-after=1`); empty: the request runs as it would without one. */
export const ScriptStep = z.string().max(STEP_MAX_CHARS);
/** D-126: the n-th request of a test id gets step n; past the end, the last step again. */
export const Script = z.array(ScriptStep).min(1).max(SCRIPT_MAX_STEPS);
export type ScriptT = z.infer<typeof Script>;

/** A script's name, as `Parley-Scenario: script=<name>` gives it. */
export const ScriptName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1 to 64 letters, digits, ".", "_" or "-"');
/** `fixtures/scenarios.json`: the named scripts. */
export const ScriptBook = z.record(ScriptName, Script);
export type ScriptBookT = z.infer<typeof ScriptBook>;

/** A test id, as `Parley-Test-Id` gives it (a key's id serves as one for a key's script, D-127). */
export const TestId = z.string().regex(/^[\x21-\x7e]{1,128}$/, 'must be 1 to 128 visible ASCII characters');

/** D-125: one request of a test run, as the client's behaviour shows it. */
export const TestRunRequest = z.object({
  /** When it arrived (Unix ms). */
  at_ms: z.number().int().nonnegative(),
  method: z.string(),
  /** Its path, without the query. */
  path: z.string(),
  /** The step of the script applied (1 is the first); null when the request ran no script. */
  step: z.number().int().positive().nullable(),
  /** The status answered. */
  status: z.number().int(),
  idempotency_key: z.string().nullable(),
  last_event_id: z.string().nullable(),
  /** The `starting_after` query parameter (a resume, D-32). */
  starting_after: z.string().nullable(),
  /** Since the latest earlier answer of the test id that carried `Retry-After` (ms); null when none did. */
  retry_after_gap_ms: z.number().int().nullable(),
});
export type TestRunRequestT = z.infer<typeof TestRunRequest>;

/** `GET /v1/apps/{app_id}/test-runs/{test_id}`: what Parley saw for a test id, in the order the requests came. */
export const TestRun = z.object({
  object: z.literal('test_run'),
  id: z.string(),
  requests: z.array(TestRunRequest),
});
export type TestRunT = z.infer<typeof TestRun>;

/** `PUT /admin/v1/keys/{key_id}/scenario`: the steps, inline. */
export const SetKeyScenarioRequest = z.strictObject({ script: Script });

/** A key's script (D-127); `script` null once removed. Its test run's id is the key's. */
export const KeyScenario = z.object({
  object: z.literal('key_scenario'),
  key_id: z.string(),
  script: Script.nullable(),
});
