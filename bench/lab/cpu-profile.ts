// A `.cpuprofile` (node --cpu-prof) read into times per function: the profile benches' one reading.

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** A function as `name file:line`, its path from `src/` or `node_modules/`. */
export function labelOf(n: ProfileNode): string {
  return `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/(node_modules|src)\//, '$1/').replace(/^file:\/\//, '')}:${n.callFrame.lineNumber + 1}`;
}

/**
 * Microseconds sampled per node (`self`), and per label: self time (`selfBy`) and inclusive time
 * (`incl`: a node's self time plus its descendants', counted once per label on each path).
 */
export function profileTimes(p: Profile) {
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const selfBy = new Map<string, number>();
  for (const [id, t] of self) {
    const key = labelOf(byId.get(id)!);
    selfBy.set(key, (selfBy.get(key) ?? 0) + t);
  }
  const incl = new Map<string, number>();
  const walk = (id: number, onPath: Set<string>): number => {
    const n = byId.get(id)!;
    let t = self.get(id) ?? 0;
    const key = labelOf(n);
    const fresh = !onPath.has(key);
    if (fresh) onPath.add(key);
    for (const c of n.children ?? []) t += walk(c, onPath);
    if (fresh) {
      onPath.delete(key);
      incl.set(key, (incl.get(key) ?? 0) + t);
    }
    return t;
  };
  walk(p.nodes[0]!.id, new Set());
  return { self, byId, selfBy, incl };
}
