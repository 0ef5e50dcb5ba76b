// D-129: synthetic test events for one endpoint (`POST /admin/v1/webhook_endpoints/:id/test`, `parley
// webhooks trigger`), so that a team proves its receiver's signature check and de-duplication without
// provoking real traffic. Each is an event of the outbox like any other (signed by the worker, in the
// delivery log) with `"test": true` at the top and `data` shaped as a real one of its type, made up.
import { newId } from '../../core/ids.ts';
import type { WebhookEndpointT, WebhookEventType } from '../../core/webhook-endpoint.ts';
import type { OutboxEvent } from '../../store/webhooks.ts';
import { responseOf } from '../send/response-resource.ts';

export interface TestRequest {
  type: WebhookEventType;
  duplicate?: boolean;
  out_of_order?: boolean;
  delay_s?: number;
}

const TEXT = 'This is a test event from Parley.';

/**
 * `data` as a real event of `type` carries it (D-83), about the made-up resource `id` (of the type's
 * prefix); `step` 1 is a later state of it than 0 (a title, a text).
 */
export function sampleData(type: WebhookEventType, ids: { conversation: string; other: string }, at: number, step: number) {
  const conversation = {
    id: ids.conversation,
    object: 'conversation' as const,
    created_at: at,
    external_user_id: null,
    title: step === 0 ? 'Test conversation' : 'Test conversation, renamed',
    generated_title: {},
    metadata: { parley_test: 'true' },
  };
  const usage = { input_tokens: 8, output_tokens: 7, total_tokens: 15 };
  const text = step === 0 ? TEXT : `${TEXT} (later)`;
  const error = { type: 'server_error', message: 'A test failure.', code: 'test_failure' };
  switch (type) {
    case 'conversation.created':
    case 'conversation.updated':
    case 'conversation.restored':
      return conversation;
    case 'conversation.deleted':
      return { ...conversation, deleted: true };
    case 'response.completed':
    case 'response.failed': {
      const completed = type === 'response.completed';
      // The Response as its one builder makes it for a real event (D-83).
      return responseOf(
        { id: ids.other, created_at: at, conversation_id: ids.conversation },
        completed ? [{ type: 'message', role: 'assistant', content: [{ type: 'text', text }] }] : [],
        completed ? { status: 'completed', usage } : { status: 'failed', error, usage },
      );
    }
    case 'completion.completed':
    case 'completion.failed': {
      const completed = type === 'completion.completed';
      return {
        id: ids.other,
        object: 'completion' as const,
        created_at: at,
        text: completed ? text : '',
        status: completed ? ('completed' as const) : ('failed' as const),
        ...(completed ? {} : { error }),
        usage,
      };
    }
  }
}

/**
 * The events of a test of `endpoint` at `nowMs`: one, or with `out_of_order` two about one resource,
 * the later one (made a second after) due first; each due `delay_s` from now and sent `duplicate` twice.
 */
export function testEvents(endpoint: WebhookEndpointT, req: TestRequest, nowMs: number): OutboxEvent[] {
  const now = Math.floor(nowMs / 1000);
  const due = nowMs + (req.delay_s ?? 0) * 1000;
  const ids = {
    conversation: newId('conversation'),
    other: newId(req.type.startsWith('completion.') ? 'completion' : 'response'),
  };
  const steps = req.out_of_order ? [0, 1] : [0];
  return steps.map((step) => {
    const id = newId('event');
    const created_at = now - (steps.length - 1 - step);
    const data = sampleData(req.type, ids, created_at, step);
    const body = JSON.stringify({ id, object: 'event', type: req.type, created_at, app_id: endpoint.app_id, data, test: true });
    // Out of order: the later event is due first; one endpoint is sent one delivery at a time, oldest due first.
    const due_at = req.out_of_order && step === 0 ? due + 1 : due;
    return {
      id,
      team_id: endpoint.team_id,
      app_id: endpoint.app_id,
      type: req.type,
      created_at,
      body,
      deliveries: [{ endpoint_id: endpoint.id, state: 'pending' as const, due_at, ...(req.duplicate ? { sends: 2 } : {}) }],
    };
  });
}
