// What the model engines' tests ask an engine (a knowledge app's turn with history and metadata) and read
// from it: every event of a turn, or the ModelError it failed with.
import assert from 'node:assert/strict';
import { ModelError, type ModelEvent, type ModelRequest } from '../../src/engines/types.ts';
import { knowledgeSearchSpec } from '../../src/services/tools.ts';

export async function collect(it: AsyncIterable<ModelEvent>): Promise<ModelEvent[]> {
  const out: ModelEvent[] = [];
  for await (const e of it) out.push(e);
  return out;
}

export async function failure(p: Promise<unknown>): Promise<ModelError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ModelError, `expected a ModelError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a failure');
}

/** A knowledge app's turn: instructions, metadata, two earlier turns and the question. */
export function request(over: Partial<ModelRequest> = {}): ModelRequest {
  return {
    kind: 'response',
    agentName: 'Librarian',
    instructions: 'Answer from the knowledge base.',
    metadata: { user_name: 'Ada' },
    messages: [
      { role: 'user', content: 'Earlier question' },
      { role: 'assistant', content: 'Earlier answer' },
      { role: 'user', content: 'How do I rotate a key?' },
    ],
    tools: [knowledgeSearchSpec()],
    fast: false,
    ...over,
  };
}
