// Scripts and test runs (docs/scenarios.md, D-125…D-128): which step of a script a request runs, and what
// Parley saw of each test id. A request takes part when it carries `Parley-Test-Id`, or when its key has
// a script (D-127); every other request costs nothing here. The store (src/store/test-runs.ts) counts
// the requests of a test id atomically, so that instances behind a balancer follow one script.
import type { IncomingMessage } from 'node:http';
import { invalidRequest, notFound } from '../core/api-errors.ts';
import type { KeyT } from '../core/tenants.ts';
import { type ScriptBookT, type ScriptT, TestId, type TestRunT } from '../contract/scenarios.ts';
import type { TestRuns } from '../store/test-runs.ts';

export const TEST_ID_HEADER = 'parley-test-id';
export const SCENARIO_HEADER = 'parley-scenario';

/** A request that takes part in a test run, once it has its turn. */
export interface ScriptedTurn {
  /** The step of its script the request runs (a directive list, maybe empty); none: it follows no script. */
  step: string | undefined;
  /** Lists the request in its run, with the status answered and whether the answer carried `Retry-After`. */
  finish(answer: Answered): Promise<void>;
}

export interface Answered {
  status: number;
  retryAfter: boolean;
}

/** What a request says of itself that a test run shows (D-125). */
export interface RunRequest {
  req: IncomingMessage;
  /** Its path without the query. */
  path: string;
  query: URLSearchParams;
  appId: string;
  /**
   * Its key, when known (on /widget/v1 the publishable key it names, found before the widget's gate,
   * D-127); asked only of a request that brings no test id or scenario of its own.
   */
  key(): KeyT | undefined;
  /** It brings a scenario of its own in the query (the widget API's `scenario` parameter, D-120). */
  ownQuery: boolean;
}

/** The request's test id and script, or none when it takes no part in a test run. */
interface Plan {
  testId: string;
  script: { steps: ScriptT; mark: string } | null;
}

export class TestRunService {
  constructor(
    private readonly runs: TestRuns,
    private readonly book: ScriptBookT,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The request's turn in its test run, counted in the store; undefined (nothing counted, nothing
   * awaited) when it carries no test id and its key has no script. 400 for a bad test id, a script
   * named without one, or a script that `fixtures/scenarios.json` does not name.
   */
  begin(r: RunRequest): Promise<ScriptedTurn> | undefined {
    const plan = this.plan(r);
    return plan && this.turn(r, plan);
  }

  private plan(r: RunRequest): Plan | undefined {
    const rawId = header(r.req, TEST_ID_HEADER);
    const own = header(r.req, SCENARIO_HEADER);
    // D-127: the key's script, for a request that brings neither header of its own.
    if (rawId === undefined && own === undefined) {
      const key = r.ownQuery ? undefined : r.key();
      const s = key?.scenario;
      return s ? { testId: key.id, script: { steps: s.script, mark: `key@${s.set_at}` } } : undefined;
    }
    const name = scriptName(own);
    if (rawId === undefined) {
      if (name === undefined) return undefined;
      throw invalidRequest(
        'A script runs for a test id: send Parley-Test-Id with Parley-Scenario: script=<name>.',
        'Parley-Test-Id',
        'missing_parameter',
      );
    }
    if (!TestId.safeParse(rawId).success)
      throw invalidRequest('Parley-Test-Id must be 1 to 128 visible ASCII characters.', 'Parley-Test-Id', 'invalid_value');
    if (name === undefined) return { testId: rawId, script: null };
    const steps = Object.hasOwn(this.book, name) ? this.book[name] : undefined;
    if (!steps) throw invalidRequest(`No script is named ${JSON.stringify(name)} in scenarios.json.`, 'Parley-Scenario', 'invalid_value');
    return { testId: rawId, script: { steps, mark: `script:${name}` } };
  }

  private async turn(r: RunRequest, plan: Plan): Promise<ScriptedTurn> {
    const at = this.now();
    const turn = await this.runs.advance(r.appId, plan.testId, at, plan.script?.mark ?? null);
    // D-126: past the end of its script, a request runs the last step again.
    const stepNo = plan.script ? Math.min(turn.n, plan.script.steps.length) : null;
    const q = (name: string) => r.query.get(name);
    return {
      step: plan.script?.steps[stepNo! - 1],
      finish: async (answer) => {
        const answeredAt = this.now();
        const request = {
          at_ms: at,
          method: r.req.method ?? 'GET',
          path: r.path,
          step: stepNo,
          status: answer.status,
          idempotency_key: header(r.req, 'idempotency-key') ?? null,
          last_event_id: header(r.req, 'last-event-id') ?? null,
          starting_after: q('starting_after'),
          retry_after_gap_ms: turn.retryAfterAt === null ? null : at - turn.retryAfterAt,
        };
        await this.runs.record(r.appId, plan.testId, turn, request, answer.retryAfter ? answeredAt : null);
      },
    };
  }

  /** `GET /v1/apps/{app_id}/test-runs/{test_id}` (D-125): 404 when the app has no such run (or it expired). */
  async view(appId: string, testId: string): Promise<TestRunT> {
    const requests = await this.runs.read(appId, testId, this.now());
    if (!requests) throw notFound(`Test run ${JSON.stringify(testId)}`, 'test_id');
    return { object: 'test_run', id: testId, requests };
  }
}

/** A header's value, once (node joins a repeated one with ", "). */
function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** The name of `script=<name>`; a script stands alone in its header (another directive beside it is a 400). */
function scriptName(own: string | undefined): string | undefined {
  if (own === undefined) return undefined;
  const parts = own.split(';').map((p) => p.trim());
  const at = parts.findIndex((p) => p === 'script' || p.startsWith('script='));
  if (at === -1) return undefined;
  if (parts.filter((p) => p !== '').length > 1)
    throw invalidRequest(
      'script=<name> stands alone in Parley-Scenario: its steps say every directive.',
      'Parley-Scenario',
      'invalid_value',
    );
  const name = parts[at]!.slice('script='.length);
  if (name === '') throw invalidRequest('script= names a script of scenarios.json.', 'Parley-Scenario', 'invalid_value');
  return name;
}
