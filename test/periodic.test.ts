// src/core/periodic.ts: the one timer the stores' prunes and sweeps run on (mocked timers: no waiting).
import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { Periodic } from '../src/core/periodic.ts';

test('a run every ms, never two at once; a failed run is told and the next runs; stop waits for the one under way', async () => {
  mock.timers.enable({ apis: ['setInterval'] });
  try {
    const ends: Array<(fail?: boolean) => void> = [];
    const errors: string[] = [];
    const p = new Periodic(
      () => new Promise<void>((resolve, reject) => ends.push((fail) => (fail ? reject(new Error('no disk')) : resolve()))),
      100,
      (err) => errors.push(err.message),
    );
    mock.timers.tick(99);
    assert.equal(ends.length, 0, 'nothing before the first ms');
    mock.timers.tick(1);
    assert.equal(ends.length, 1);
    mock.timers.tick(300);
    assert.equal(ends.length, 1, 'ticks while a run is under way are skipped');
    ends[0]!(true);
    await new Promise(setImmediate);
    assert.deepEqual(errors, ['no disk']);
    mock.timers.tick(100);
    assert.equal(ends.length, 2, 'the next tick runs again after a failure');
    let stopped = false;
    const stopping = p.stop().then(() => (stopped = true));
    await new Promise(setImmediate);
    assert.equal(stopped, false, 'stop waits for the run under way');
    ends[1]!();
    await stopping;
    mock.timers.tick(1_000);
    assert.equal(ends.length, 2, 'no run after stop');
  } finally {
    mock.timers.reset();
  }
});
