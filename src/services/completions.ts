// Create completion (§4.7): one prompt, no conversation, no history; knowledge_search the only tool;
// token usage recorded per app (credits) and returned as `usage`.
import type { Logger } from 'pino';
import type { CompletionT, CreateCompletionRequestT } from '../contract/index.ts';
import type { AppT } from '../core/tenants.ts';
import type { IdempotencyClaim } from '../core/claims.ts';
import type { Scenario } from '../core/scenario.ts';
import type { AgentRuntime } from './agent.ts';
import { newId } from '../core/ids.ts';
import { unixNow } from '../core/clock.ts';
import { ResponseRun } from './send/response-runner.ts';
import type { UsageLedger } from '../store/shared.ts';

export interface StartedCompletion {
  run: ResponseRun;
  toCompletion(): CompletionT;
}

export class CompletionService {
  constructor(
    private readonly agent: AgentRuntime,
    private readonly usage: UsageLedger,
    private readonly log: Logger,
    /** docs/webhooks.md (D-83): told of each finished completion, once its usage is saved (its only save). */
    private readonly onFinished?: (appId: string, completion: CompletionT) => Promise<void>,
  ) {}

  start(app: AppT, body: CreateCompletionRequestT, signal: AbortSignal, claim?: IdempotencyClaim, scenario?: Scenario): StartedCompletion {
    const id = newId('completion');
    const createdAt = unixNow();
    const tools = this.agent.tools(app, 'completion', body.knowledge_search ?? true);
    const run: ResponseRun = new ResponseRun({
      id,
      kind: 'completion',
      engine: this.agent.engine(app),
      // The prompt is the user's turn: an instruction for this text only, never a change of the agent's rules.
      request: this.agent.request(
        app,
        'completion',
        tools,
        [{ role: 'user', content: body.prompt }],
        body.metadata ?? {},
        body.fast ?? false,
      ),
      tools,
      signal,
      scenario,
      onUnexpected: (err) => this.log.error({ err, completion_id: id }, 'completion failed unexpectedly'),
      finish: async (r) => {
        if (r.error) this.log.warn({ completion_id: id, app_id: app.id, code: r.error.code }, 'completion failed');
        // The usage line is the completion's only save: it carries the Idempotency-Key claim, in one journal record.
        await this.usage.record(app.id, 'completion', id, r.usage, claim);
        await this.onFinished?.(app.id, toCompletion());
      },
    });
    const toCompletion = (): CompletionT => ({
      id,
      object: 'completion',
      created_at: createdAt,
      text: run.text,
      status: run.status === 'failed' ? 'failed' : 'completed',
      ...(run.error ? { error: run.error } : {}),
      usage: run.usage,
    });
    return { run, toCompletion };
  }
}
