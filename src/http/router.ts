// A router that is a small table: method + path pattern → route. Patterns use `:name` segments.
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteDef<R> {
  method: HttpMethod;
  pattern: string;
  route: R;
}

export type Match<R> =
  | { kind: 'found'; route: R; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allow: HttpMethod[]; params: Record<string, string> }
  | { kind: 'not_found' };

interface Compiled<R> {
  method: HttpMethod;
  segments: string[];
  route: R;
}

export class Router<R> {
  private readonly table: Compiled<R>[];

  constructor(defs: RouteDef<R>[]) {
    this.table = defs.map((d) => ({ method: d.method, segments: d.pattern.split('/'), route: d.route }));
  }

  /**
   * `path` is the raw (still percent-encoded) path below the base URL. Empty segments are kept, so a
   * trailing or doubled slash names no route (D-3: an unknown path).
   */
  match(method: string, path: string): Match<R> {
    const parts = path.split('/');
    const allow: HttpMethod[] = [];
    let found: Record<string, string> = {};
    for (const entry of this.table) {
      const params = matchSegments(entry.segments, parts);
      if (!params) continue;
      if (entry.method === method) return { kind: 'found', route: entry.route, params };
      allow.push(entry.method);
      found = params;
    }
    return allow.length > 0 ? { kind: 'method_not_allowed', allow, params: found } : { kind: 'not_found' };
  }
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | null {
  if (pattern.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    const raw = parts[i]!;
    if (p.startsWith(':')) {
      if (raw === '') return null; // `/apps//config`: no id, so no such path
      let value: string;
      try {
        value = decodeURIComponent(raw);
      } catch {
        return null; // Not a valid percent-encoding: no resource can have this name.
      }
      params[p.slice(1)] = value;
    } else if (p !== raw) {
      return null;
    }
  }
  return params;
}
