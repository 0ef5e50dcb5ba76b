// The one reducer from §6 events to a response: the runner builds its output with it as it hands out
// each event, the look-up of a running response (D-32) and crash recovery (D-38) rebuild theirs from
// the stored events with it, so the stream and the JSON body can never disagree (§6 rule 4).
import type { OutputItemT, ResponseErrorT, UnsequencedEvent, UsageT } from '../../contract/index.ts';

/** A response as its events so far describe it. */
export interface FoldedResponse {
  output: OutputItemT[];
  status: 'in_progress' | 'completed' | 'failed';
  error?: ResponseErrorT;
  usage?: UsageT;
}

type MessageItem = Extract<OutputItemT, { type: 'message' }>;
type CallItem = Extract<OutputItemT, { type: 'function_call' }>;

export const emptyResponse = (): FoldedResponse => ({ output: [], status: 'in_progress' });

/** Folds one event into `r` (changed in place, and returned). Every event type has its case. */
export function foldEvent(r: FoldedResponse, e: UnsequencedEvent): FoldedResponse {
  const out = r.output;
  switch (e.event) {
    case 'response.created':
      r.status = 'in_progress';
      break;
    case 'response.output_text.delta': {
      const item = (out[e.data.output_index] ??= message('')) as MessageItem;
      const part = (item.content![e.data.content_index] ??= { type: 'text', text: '' });
      part.text = (part.text ?? '') + e.data.delta;
      break;
    }
    case 'response.output_text.done':
      out[e.data.output_index] = message(e.data.text);
      break;
    case 'response.function_call.start':
      out[e.data.output_index] = { type: 'function_call', name: e.data.name, arguments: '', call_id: e.data.call_id };
      break;
    case 'response.function_call_arguments.delta':
      (out[e.data.output_index] as CallItem).arguments += e.data.delta;
      break;
    case 'response.function_call_arguments.done':
      (out[e.data.output_index] as CallItem).arguments = e.data.arguments;
      break;
    case 'response.data_spec':
      out[e.data.output_index] = { type: 'data_spec', data: e.data.data };
      break;
    case 'response.completed':
      r.status = 'completed';
      if (e.data.usage) r.usage = e.data.usage;
      break;
    case 'response.failed':
      r.status = 'failed';
      r.error = e.data.error;
      if (e.data.usage) r.usage = e.data.usage;
      break;
    default:
      // A new event type fails to compile here until it has its case.
      e satisfies never;
  }
  return r;
}

/** The response `events` describe, from the first. */
export function foldEvents(events: Iterable<UnsequencedEvent>): FoldedResponse {
  const r = emptyResponse();
  for (const e of events) foldEvent(r, e);
  return r;
}

function message(text: string): MessageItem {
  return { type: 'message', role: 'assistant', content: [{ type: 'text', text }] };
}
