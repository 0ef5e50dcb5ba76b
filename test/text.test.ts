// The text helpers of the embedded engine: the answers quote whole sentences of the knowledge base.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sentences } from '../src/engines/text.ts';

describe('sentences', () => {
  it('keeps dotted names inside a sentence whole', () => {
    const passage =
      'Every event has a sequence_number, so a client can tell that it missed nothing. Tool calls appear as response.function_call.start events before the text. A third one.';
    assert.equal(
      sentences(passage, 2),
      'Every event has a sequence_number, so a client can tell that it missed nothing. Tool calls appear as response.function_call.start events before the text.',
    );
  });

  it('ends a sentence at a file name that closes it, and keeps an unterminated tail', () => {
    assert.equal(
      sentences('The reply uses text/event-stream. The stream starts with response.created', 2),
      'The reply uses text/event-stream. The stream starts with response.created',
    );
    assert.equal(sentences('Is it here? Yes! No.', 2), 'Is it here? Yes!');
    assert.equal(sentences('  no punctuation at all  ', 1), 'no punctuation at all');
  });
});
