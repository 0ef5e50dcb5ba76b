// The scenario directives on the file store (test/support/scenario-suite.ts; PostgreSQL: test/proof/pg-scenarios.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ScenarioPlay } from '../src/services/send/scenario-pacing.ts';
import { fixturesEdited, startTestServer, type TestServer } from './support/helpers.ts';
import { readStream, scenarioSuite } from './support/scenario-suite.ts';
import { postSse } from './support/sse-client.ts';

scenarioSuite('file store', () => startTestServer());

describe('D-124 the pacing is reproducible, and ttft and stall end at the maximum reply duration', () => {
  it('the same seed draws the same waits; another seed others; no jitter: 1000 / tps', () => {
    const waits = (seed: number) => {
      const play = new ScenarioPlay({ pacing: { tps: 10, jitterMs: 40, seed } });
      return Array.from({ length: 8 }, () => play.nextWaitMs(10, 40));
    };
    assert.deepEqual(waits(7), waits(7));
    assert.notDeepEqual(waits(7), waits(8));
    for (const w of waits(7)) assert.ok(w >= 60 && w <= 140, String(w));
    assert.equal(new ScenarioPlay({}).nextWaitMs(4, 0), 250);
  });

  let s: TestServer;
  before(async () => {
    // app_stream with a maximum reply duration of one second.
    const dir = await fixturesEdited((json) => {
      for (const app of json.apps) if (app.id === 'app_stream') app.responses = { max_duration_seconds: 1 };
    });
    // Keep-alive comments every 20 ms: a stall that let them through would show dozens.
    s = await startTestServer({ fixturesDir: dir, keepAliveMs: 20 });
  });
  after(() => s.close());
  const send = async (scenario: string) => {
    const c = (await s.call('POST', '/apps/app_stream/conversations', {})).body.id;
    return postSse(
      s.baseUrl,
      `/apps/app_stream/conversations/${c}`,
      { message: { content: 'Hello' }, stream: true },
      {
        headers: { 'parley-scenario': scenario },
      },
    );
  };

  it('a ttft past the maximum duration ends the reply there (response_timeout)', async () => {
    const r = await send('ttft=600000');
    assert.equal(r.events.at(-1)!.event, 'response.failed');
    assert.equal(r.events.at(-1)!.data.error.code, 'response_timeout');
  });

  it('a stall past the maximum duration lasts only that long, keep-alive comments held back too, then the stream goes on', async () => {
    const c = (await s.call('POST', '/apps/app_stream/conversations', {})).body.id;
    const r = await readStream(`${s.baseUrl}/apps/app_stream/conversations/${c}`, {
      method: 'POST',
      body: { message: { content: 'Hello' }, stream: true },
      headers: { 'parley-scenario': 'stall-after=1:600000' },
    });
    assert.equal(r.events[0]!.event, 'response.created');
    assert.equal(r.events.at(-1)!.event, 'response.completed');
    // Between the 1st event and the 2nd: the stall, a second long, without a comment.
    const afterFirst = r.text.indexOf('\n\n', r.text.indexOf('event: response.created')) + 2;
    const second = r.text.indexOf('event: ', afterFirst);
    assert.equal(r.text.slice(afterFirst, second), '');
    // The same server's ttft wait (no stall) is kept alive: the comments do come on this server.
    const kept = await send('ttft=300');
    assert.ok(kept.comments.length > 0);
  });
});
