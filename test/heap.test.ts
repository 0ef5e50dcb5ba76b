// The heap growth limit applied by `npm start` (src/heap.ts): set unless Node was told otherwise.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { limitHeapGrowth } from '../src/heap.ts';

describe('limitHeapGrowth', () => {
  test('sets the growing factor, unless --heap-growing-percent was given on the command line', () => {
    assert.equal(limitHeapGrowth(['--import', 'tsx']), true);
    assert.equal(limitHeapGrowth(['--heap-growing-percent=50']), false);
    assert.equal(limitHeapGrowth(['--heap_growing_percent', '30']), false);
  });
});
