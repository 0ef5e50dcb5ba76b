// D-146: the conformance suite on a replayed model. A target with `"model": "replay"` gives the agent
// the same run id on every run, so that a case recorded once against the model passes on its tapes
// again and again with no model; a live target's own run id reaches the model and misses its tape.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { runConformance } from '../conformance/run.ts';
import { parseTarget } from '../conformance/target.ts';
import { type FakeOpenAI, sse, startFakeOpenAI, textChunks } from './support/fake-openai.ts';
import { startTestServer, TARGET_JSON, tempDir } from './support/helpers.ts';

const CASE = 'S4.6-send-json-shape';
let fake: FakeOpenAI;
before(async () => {
  fake = await startFakeOpenAI();
});
after(() => fake.close());

async function run(baseUrl: string, model?: 'replay') {
  const target = parseTarget({ ...TARGET_JSON, version: 5, ...(model ? { model } : {}) }, { baseUrl });
  const r = await runConformance({ target, only: CASE, handleSignals: false });
  return r.summary;
}

test('a replay target passes on its tapes run after run, with no model; a live target misses them (D-146)', async () => {
  const dir = await tempDir('parley-suite-tapes-');
  fake.script(sse(textChunks(['To reset your password, open Settings.'])));
  const recording = await startTestServer({ model: 'openai:fake-model', openaiBaseUrl: fake.url, recordTapes: dir });
  try {
    assert.equal((await run(recording.baseUrl, 'replay')).passed, 1);
  } finally {
    await recording.close();
  }
  await fake.close();
  const calls = fake.requests.length;
  const replaying = await startTestServer({ model: 'openai:fake-model', openaiBaseUrl: fake.url, replayTapes: dir, tapeTiming: 'fast' });
  try {
    assert.equal((await run(replaying.baseUrl, 'replay')).passed, 1, 'the first replay');
    assert.equal((await run(replaying.baseUrl, 'replay')).passed, 1, 'and the next: the same text reached the model');
    assert.equal((await run(replaying.baseUrl)).failed, 1, "a live target's run id is not on the tapes");
    assert.equal(fake.requests.length, calls, 'no call left for the model');
  } finally {
    await replaying.close();
  }
});
