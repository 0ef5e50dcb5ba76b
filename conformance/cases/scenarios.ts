// Scenarios, an extension (docs/scenarios.md, D-120…D-124): reference-level cases of a target that
// declares the capability. The server cuts a stream on purpose, so that a resume is tested on a real cut
// rather than on one the suite races to make.
import { LiveResponse } from '../../src/contract/index.ts';
import { CaseSkip, defineCases } from '../context.ts';
import { convPath, createConversation, expectStream, textOf, type Json } from './common.ts';
import { deltasOf } from './resumable.ts';

export const scenarios = defineCases('4.6', [
  {
    id: 'S4.6-scenario-drop-resumes-once',
    level: 'REFERENCE',
    capability: 'scenarios',
    uses: ['resumable'],
    clauses: ['D-124', 'D-120'],
    description:
      'D-124: `Parley-Scenario: drop-after=3` cuts the stream after its 3rd event; the reply runs on, and a resume with Last-Event-ID set to the last sequence number seen (D-32) gives the rest: the two carry the text of the look-up exactly once',
    async run(ctx) {
      if (!ctx.target.claims.resumable.claimed)
        throw new CaseSkip('a cut is resumed by a resumable response: the target does not claim resumable');
      const { conv } = await createConversation(ctx);
      const cut = await ctx.send({
        method: 'POST',
        path: convPath(ctx.target.appId, conv.id),
        headers: { 'parley-scenario': 'drop-after=3' },
        body: { message: { content: 'Hello! How do I reset my password?' }, stream: true },
      });
      ctx.check(cut.sse !== undefined, 'the send with drop-after=3 did not answer an event stream', cut);
      ctx.check(cut.sse!.ended === false && cut.sse!.events.length === 3, 'drop-after=3 did not cut the stream after its 3rd event', cut);
      const first = cut.sse!.events[0]!.json as Json;
      const last = (cut.sse!.events.at(-1)!.json as Json).sequence_number;
      const path = `/apps/${encodeURIComponent(ctx.target.appId)}/responses/${encodeURIComponent(String(first.id))}`;
      const rest = await ctx.send({ method: 'GET', path: `${path}/events`, headers: { 'last-event-id': String(last) } });
      expectStream(ctx, rest, 'the resume after the cut');
      ctx.equal(rest.sse!.events[0]?.id, String(Number(last) + 1), 'the id of the first event resumed', rest);
      ctx.equal(rest.sse!.events.at(-1)?.event, 'response.completed', 'the last event resumed', rest);
      const look = await ctx.send({ method: 'GET', path });
      const ended = ctx.ok(look, LiveResponse, 'look-up of the cut reply') as Json;
      ctx.equal(deltasOf(cut) + deltasOf(rest), ((ended.output as Json[]) ?? []).map(textOf).join(''), 'the text of the two streams', look);
    },
  },
]);
