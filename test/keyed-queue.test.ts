// The keyed queue (src/core/keyed-queue.ts): each key's work in turn, in arrival order; other keys
// never wait; a waiter that leaves passes its turn on; the count of those waiting.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KeyedQueue } from '../src/core/keyed-queue.ts';

/** A latch: `open()` resolves `opened`. */
function latch() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

describe('KeyedQueue', () => {
  test('work on one key runs in turn and in order; a failure does not stop the line; other keys run at once', async () => {
    const q = new KeyedQueue();
    const order: string[] = [];
    const first = latch();
    const a1 = q.run('a', async () => {
      await first.opened;
      order.push('a1');
    });
    const a2 = q.run('a', async () => {
      order.push('a2');
      throw new Error('a2 fails');
    });
    const a3 = q.run('a', async () => {
      order.push('a3');
      return 3;
    });
    // Another key does not wait for `a`.
    assert.equal(await q.run('b', async () => 'b'), 'b');
    assert.deepEqual(order, []);
    first.open();
    await a1;
    await assert.rejects(a2, /a2 fails/);
    assert.equal(await a3, 3);
    assert.deepEqual(order, ['a1', 'a2', 'a3']);
  });

  test('idle: resolves once every turn queued so far has passed, of every key; at once when none is queued', async () => {
    const q = new KeyedQueue();
    await q.idle();
    const held = latch();
    const done: string[] = [];
    void q.run('a', async () => {
      await held.opened;
      done.push('a');
    });
    void q.run('b', async () => {
      done.push('b');
    });
    const idle = q.idle().then(() => done.push('idle'));
    await q.run('b', async () => {});
    assert.deepEqual(done, ['b'], 'idle waits for the held turn of a');
    held.open();
    await idle;
    assert.deepEqual(done, ['b', 'a', 'idle']);
  });

  test('enter: the turn is held until passed on; waiting counts those behind; a waiter whose signal aborts leaves the line', async () => {
    const q = new KeyedQueue();
    const pass1 = await q.enter('k');
    assert.equal(q.waiting('k'), 0);
    const second = q.enter('k');
    const leaving = new AbortController();
    const third = q.enter('k', leaving.signal);
    const fourth = q.enter('k');
    assert.equal(q.waiting('k'), 3);
    leaving.abort(new Error('client disconnected'));
    await assert.rejects(third, /client disconnected/);
    assert.equal(q.waiting('k'), 2);
    let secondHasIt = false;
    void second.then(() => (secondHasIt = true));
    await Promise.resolve();
    assert.equal(secondHasIt, false, 'the turn is still held');
    pass1();
    pass1(); // a second call does nothing
    const pass2 = await second;
    assert.equal(q.waiting('k'), 1);
    let fourthHasIt = false;
    const got4 = fourth.then((p) => {
      fourthHasIt = true;
      return p;
    });
    await Promise.resolve();
    assert.equal(fourthHasIt, false);
    // The third left: its turn passes on as soon as the second passes the turn.
    pass2();
    (await got4)();
    assert.equal(q.waiting('k'), 0);
    // run() waits for enter()'s holders too.
    const pass5 = await q.enter('k');
    const order: string[] = [];
    const ran = q.run('k', async () => void order.push('run'));
    order.push('holder');
    pass5();
    await ran;
    assert.deepEqual(order, ['holder', 'run']);
  });

  test('a line with nothing left in it is forgotten', async () => {
    const q = new KeyedQueue();
    await q.run('x', async () => {});
    const pass = await q.enter('y');
    pass();
    await q.run('y', async () => {});
    await new Promise((r) => setImmediate(r));
    assert.equal((q as unknown as { lines: Map<string, unknown> }).lines.size, 0);
  });
});
