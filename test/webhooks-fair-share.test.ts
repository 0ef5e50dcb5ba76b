// D-169: the worker's share of its slots (src/services/webhooks/fair-share.ts), on the deliveries an
// outbox offers; test/support/fair-delivery.ts shows it with real receivers on both stores.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FairShare } from '../src/services/webhooks/fair-share.ts';
import type { Due } from '../src/store/webhooks.ts';

let at = 0;
/** A due delivery to `endpoint` of `team`, each one younger than the one before. */
const due = (team: string, endpoint: string): Due => ({
  delivery: { event_id: `evt_${++at}`, endpoint_id: endpoint, state: 'pending', attempts: 0, next_at: at },
  team_id: team,
});
const many = (team: string, n: number) => Array.from({ length: n }, (_, i) => due(team, `${team}_ep${i}`));
const teams = (picked: Due[]) => picked.map((d) => d.team_id);

test('D-169: teams take turns, oldest first, and one team has at most half the slots', () => {
  const share = new FairShare(16);
  const busy = many('a', 20);
  const picked = share.pick([...busy, due('b', 'b_ep0')]);
  assert.equal(teams(picked).filter((t) => t === 'a').length, 8, 'half the slots for the team with 20 endpoints');
  assert.ok(teams(picked).includes('b'), 'the younger team’s delivery gets a slot beside them');
  const turns = new FairShare(6).pick([...many('x', 5), ...many('y', 5), ...many('z', 5)]);
  assert.deepEqual(teams(turns), ['x', 'y', 'z', 'x', 'y', 'z'], 'each team’s oldest, then each one’s next');
});

test('D-169: an endpoint with an attempt in flight gets none; what is in flight counts against its team', () => {
  const share = new FairShare(16);
  for (const d of many('a', 7)) share.start(d.delivery.endpoint_id, 'a');
  const picked = share.pick([due('a', 'a_ep0'), ...many('a', 10).slice(7), due('c', 'c_ep0')]);
  assert.deepEqual(
    picked.map((d) => d.delivery.endpoint_id),
    ['a_ep7', 'c_ep0'],
    'a_ep0 is busy; team a had 7 of its 8 in flight',
  );
  share.finish('a_ep0', false);
  assert.equal(share.inFlight, 6);
});

test('D-169: endpoints that failed or were slow share half of what healthy ones may, so healthy ones keep their slots', () => {
  const share = new FairShare(16);
  const failing = many('a', 10);
  for (const d of failing) {
    share.start(d.delivery.endpoint_id, 'a');
    share.finish(d.delivery.endpoint_id, true);
  }
  const healthy = [due('a', 'a_fine0'), due('a', 'a_fine1')];
  const picked = share.pick([...failing.map((d) => due('a', d.delivery.endpoint_id)), ...healthy]);
  const ids = picked.map((d) => d.delivery.endpoint_id);
  assert.equal(ids.filter((id) => id.startsWith('a_ep')).length, 4, 'half of the team’s 8 for its failing endpoints');
  assert.ok(ids.includes('a_fine0') && ids.includes('a_fine1'), 'its healthy endpoints are picked too');
  // Across teams: struggling endpoints of every team hold at most half the slots in all.
  const wide = new FairShare(16);
  const all = ['p', 'q', 'r', 's', 't'].flatMap((t) => many(t, 4));
  for (const d of all) {
    wide.start(d.delivery.endpoint_id, d.team_id);
    wide.finish(d.delivery.endpoint_id, true);
  }
  assert.equal(wide.pick(all.map((d) => due(d.team_id, d.delivery.endpoint_id))).length, 8);
  // A success ends it: the endpoint is healthy again.
  wide.start('p_ep0', 'p');
  wide.finish('p_ep0', false);
  const next = wide.pick([due('p', 'p_ep0'), ...all.slice(4).map((d) => due(d.team_id, d.delivery.endpoint_id))]);
  assert.equal(next.length, 9, 'eight struggling and the healthy one');
  const again = new FairShare(2);
  again.start('solo', 'u');
  again.finish('solo', true);
  assert.equal(again.pick([due('u', 'solo')]).length, 1, 'a share is never less than one');
});
