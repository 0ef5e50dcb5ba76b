// D-173: the most records of each kind a team may have, so that one team cannot grow the control
// plane's document (which every change rewrites, D-76) and slow every other team's changes. Counted
// inside the change that adds one, so that a burst of creates cannot pass the cap together.
import type { ControlDocT } from '../../core/control.ts';
import { apiError } from '../../core/api-errors.ts';

/** The caps of each team (the settings `--team-max-*`, src/settings.ts). */
export interface TeamCaps {
  keys: number;
  tokens: number;
  webhookEndpoints: number;
  apps: number;
  members: number;
}

/** What each cap counts, in the words of its refusal; revoked and expired keys and tokens are not counted. */
const COUNTED: { [K in keyof TeamCaps]: { what: string; free: string; count: (d: ControlDocT, team: string, nowS: number) => number } } = {
  keys: {
    what: 'working API keys',
    free: 'revoke one to make room',
    count: (d, team, nowS) =>
      d.keys.filter((k) => k.team_id === team && k.revoked_at === null && (k.expires_at === null || k.expires_at > nowS)).length,
  },
  tokens: {
    what: 'working personal access tokens (of all its members)',
    free: 'revoke one to make room',
    count: (d, team, nowS) => d.tokens.filter((t) => t.team_id === team && t.revoked_at === null && t.expires_at > nowS).length,
  },
  webhookEndpoints: {
    what: 'webhook endpoints',
    free: 'delete one to make room',
    count: (d, team) => d.webhook_endpoints.filter((e) => e.team_id === team).length,
  },
  apps: {
    what: 'apps',
    free: 'an app is never deleted: deactivate one and reuse it',
    count: (d, team) => d.apps.filter((a) => a.team_id === team).length,
  },
  members: {
    what: 'members (invited ones too)',
    free: 'remove one to make room',
    count: (d, team) => d.members.filter((m) => m.team_id === team).length,
  },
};

/** D-173: 409 `limit_reached`, naming the cap, when the team has `caps[kind]` of them already. */
export function checkCap(d: ControlDocT, caps: TeamCaps, kind: keyof TeamCaps, team: string, nowS: number): void {
  const { what, free, count } = COUNTED[kind];
  const cap = caps[kind];
  if (count(d, team, nowS) >= cap) throw apiError('limit_reached', `This team has reached its cap of ${cap} ${what}: ${free}.`);
}
