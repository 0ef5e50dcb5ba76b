// D-169: how an instance's attempt slots are shared, so that a team's slow or failing endpoints delay
// only themselves (D-85). An endpoint has at most one attempt in flight; a team at most half the slots;
// an endpoint whose last attempt here failed or was slow ("struggling") counts against a smaller share,
// half of each, so that healthy endpoints keep slots however many others hang. Teams take turns: each
// one's oldest due delivery, then each one's next. The outbox offers the oldest due delivery of each
// endpoint (WebhookOutbox.claim); this class picks among them and counts what is in flight.
import type { Due } from '../../store/webhooks.ts';

interface Flying {
  team: string;
  struggling: boolean;
}

const half = (n: number) => Math.max(1, Math.floor(n / 2));

export class FairShare {
  /** The attempts in flight, by endpoint. */
  private readonly flying = new Map<string, Flying>();
  /** Endpoints whose last attempt here failed or took over half the attempt's bound. */
  private readonly struggling = new Set<string>();
  readonly perTeam: number;

  constructor(readonly slots: number) {
    this.perTeam = half(slots);
  }

  get inFlight(): number {
    return this.flying.size;
  }

  /** Whether `endpointId` has an attempt in flight here. */
  busy(endpointId: string): boolean {
    return this.flying.has(endpointId);
  }

  /** What to attempt now among `due`, in turns by team, within every share. */
  pick(due: Due[]): Due[] {
    const teams = new Map<string, number>();
    const strugglingOf = new Map<string, number>();
    let strugglingAll = 0;
    for (const f of this.flying.values()) {
      teams.set(f.team, (teams.get(f.team) ?? 0) + 1);
      if (!f.struggling) continue;
      strugglingOf.set(f.team, (strugglingOf.get(f.team) ?? 0) + 1);
      strugglingAll++;
    }
    const fits = (d: Due) =>
      !this.struggling.has(d.delivery.endpoint_id) ||
      (strugglingAll < half(this.slots) && (strugglingOf.get(d.team_id) ?? 0) < half(this.perTeam));
    // Each team's deliveries oldest first; the teams in the order of their oldest.
    const queues = new Map<string, Due[]>();
    for (const d of [...due].sort((a, b) => a.delivery.next_at - b.delivery.next_at)) {
      if (this.flying.has(d.delivery.endpoint_id)) continue;
      const q = queues.get(d.team_id);
      if (q) q.push(d);
      else queues.set(d.team_id, [d]);
    }
    const picked: Due[] = [];
    let free = this.slots - this.flying.size;
    while (free > 0 && queues.size > 0) {
      for (const [team, q] of queues) {
        const i = (teams.get(team) ?? 0) < this.perTeam ? q.findIndex(fits) : -1;
        if (i < 0) {
          queues.delete(team);
          continue;
        }
        const [d] = q.splice(i, 1);
        picked.push(d!);
        teams.set(team, (teams.get(team) ?? 0) + 1);
        if (this.struggling.has(d!.delivery.endpoint_id)) {
          strugglingOf.set(team, (strugglingOf.get(team) ?? 0) + 1);
          strugglingAll++;
        }
        if (q.length === 0) queues.delete(team);
        if (--free === 0) break;
      }
    }
    return picked;
  }

  /** An attempt to `endpointId` of `team` starts. */
  start(endpointId: string, team: string): void {
    this.flying.set(endpointId, { team, struggling: this.struggling.has(endpointId) });
  }

  /** It ended: `struggling` when it failed or was slow (its next attempts count against the smaller share). */
  finish(endpointId: string, struggling: boolean | undefined): void {
    this.flying.delete(endpointId);
    if (struggling === undefined) return;
    if (struggling) this.struggling.add(endpointId);
    else this.struggling.delete(endpointId);
  }

  /** Forgets the endpoints not in `ids` (deleted ones). */
  keep(ids: ReadonlySet<string>): void {
    for (const id of this.struggling) if (!ids.has(id)) this.struggling.delete(id);
  }
}
