// The widget API's gate (docs/widget.md), in place of the REST API's auth and rate-limit stages:
// origins and CORS (D-53), the publishable key or a visitor token (D-48, D-49), and the widget's own
// limits (D-52, D-92). Order (D-54): app known (404) → widget enabled (403) → origin (403) → credential
// (401) → key's team (403) → app active, agent (403) → limits (429) → body (400) → resource (404).
import type { IncomingMessage } from 'node:http';
import { apiError } from '../core/api-errors.ts';
import type { HttpMethod } from '../http/router.ts';
import type { StreamPool } from '../http/stream-gate.ts';
import type { Route } from '../http/surface.ts';
import type { Admission, SurfaceGate } from './stages.ts';
import type { AppT, Tenants, KeyT } from '../core/tenants.ts';
import type { MinuteWindows, RateCounts } from '../store/shared.ts';
import type { AuthService } from './auth.ts';
import { waitOf } from './rate-limit.ts';
import type { VisitorTokens } from './widget-tokens.ts';

/** Headers a widget may read from an answer (a browser hides the others from a cross-origin page). */
const EXPOSED =
  'x-request-id, retry-after, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, x-ratelimit-reset-requests, parley-response-id';

export interface WidgetGateOptions {
  tenants: Tenants;
  auth: AuthService;
  tokens: VisitorTokens;
  /** D-52, D-92: the widget budgets' counts (the app's, and each visitor's and address's share), apart from the REST plans'. */
  budget: RateCounts;
  /** D-52's per-visitor and per-address windows. */
  windows: MinuteWindows;
  /** D-53: the server's own origin is allowed too (the playground); off with --no-playground. */
  allowOwnOrigin: boolean;
}

/** A count taken: its key and when, to give it back. */
type Taken = [key: string, at: number];

/** The shares' minute is not limited (the app's budget and the windows limit the minute). */
const UNLIMITED = Number.MAX_SAFE_INTEGER;

export class WidgetGate implements SurfaceGate {
  private scripted: { from: number; teams: ReadonlySet<string> } = { from: Number.NaN, teams: new Set() };

  constructor(private readonly o: WidgetGateOptions) {}

  enter(req: IncomingMessage, params: Record<string, string>): Record<string, string> {
    const app = this.widgetApp(params.app_id);
    const origin = req.headers.origin;
    // D-53: no Origin is not a browser's cross-origin request; CORS binds browsers only, and the
    // credentials and limits hold either way.
    if (origin === undefined) return { vary: 'Origin' };
    const own = this.o.allowOwnOrigin && req.headers.host !== undefined && origin === `http://${req.headers.host}`;
    if (!own && !app.widget!.origins.includes(origin)) {
      throw apiError(
        'origin_not_allowed',
        `Pages on ${JSON.stringify(origin).slice(0, 200)} may not embed the widget of app ${JSON.stringify(app.id)}: list the origin in the app's widget.origins.`,
      );
    }
    return { 'access-control-allow-origin': origin, vary: 'Origin', 'access-control-expose-headers': EXPOSED };
  }

  preflight(_req: IncomingMessage, allow: HttpMethod[]): Record<string, string> {
    return {
      'access-control-allow-methods': allow.join(', '),
      // D-116: a resume may say where it starts in Last-Event-ID, as an EventSource does on /v1 (D-32);
      // D-120: a page's test may send a scenario and a test id.
      'access-control-allow-headers': 'authorization, content-type, last-event-id, parley-scenario, parley-test-id',
      'access-control-max-age': '600',
    };
  }

  /**
   * D-127: the publishable key a request names, for its test run, looked up before the gate judges it:
   * the key itself, or the one its visitor token was issued with; undefined when it names no valid key
   * of the app's team. A publishable key is public, so finding it first reveals nothing.
   */
  keyOf(req: IncomingMessage, params: Record<string, string>, route: Route): KeyT | undefined {
    const app = params.app_id === undefined ? undefined : this.o.tenants.apps.get(params.app_id);
    // The common case costs no look-up: no key of the team has a script.
    if (!app || !this.teamsWithScripts().has(app.team_id)) return undefined;
    let key: KeyT | undefined;
    if (route.publishable) key = this.o.auth.identify(req.headers.authorization);
    else {
      try {
        key = this.visitorOf(req, app).key;
      } catch {
        return undefined; // the gate answers it
      }
    }
    return key?.type === 'publishable' && key.team_id === app.team_id ? key : undefined;
  }

  /** The teams with a key that has a script (D-127), taken again when the registry moves (D-78). */
  private teamsWithScripts(): ReadonlySet<string> {
    if (this.scripted.from !== this.o.tenants.version) {
      const teams = new Set(this.o.tenants.keys.filter((k) => k.scenario).map((k) => k.team_id));
      this.scripted = { from: this.o.tenants.version, teams };
    }
    return this.scripted.teams;
  }

  /** D-48: the key a visitor token was issued with and its visitor, or the 401 that refuses the token. */
  private visitorOf(req: IncomingMessage, app: AppT): { key: KeyT; visitor: NonNullable<Admission['visitor']> } {
    const token = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!token)
      throw apiError(
        'invalid_visitor_token',
        'Missing visitor token: send Authorization: Bearer <visitor token>, from POST /widget/v1/apps/{app_id}/visitors.',
      );
    const verified = this.o.tokens.verify(token, app);
    // A key taken out of the registry takes its visitors' tokens with it.
    const key = this.o.tenants.keys.find((k) => k.id === verified.keyId);
    if (!key) throw apiError('invalid_visitor_token', 'The key this visitor token was issued with no longer exists.');
    return { key, visitor: verified.visitor };
  }

  async admit(req: IncomingMessage, params: Record<string, string>, route: Route, address: string): Promise<Admission> {
    const app = this.widgetApp(params.app_id);
    let key: KeyT;
    let visitor: Admission['visitor'];
    if (route.publishable) {
      key = this.o.auth.authenticate(req.headers.authorization);
      if (key.type !== 'publishable') {
        throw apiError('access_denied', 'The widget API takes the publishable key (pk_live_…): a secret key must never reach a browser.');
      }
    } else ({ key, visitor } = this.visitorOf(req, app));
    if (key.team_id !== app.team_id)
      throw apiError('access_denied', `This publishable key has no access to app ${JSON.stringify(app.id)}.`);
    if (!app.active) throw apiError('app_inactive', `App ${JSON.stringify(app.id)} is disabled.`);
    if (route.needsAgent && !app.agent.active)
      throw apiError('agent_unavailable', `App ${JSON.stringify(app.id)} has no active agent configured.`);
    const refund = await this.count(app, address, visitor?.id, route.counted ?? false);
    return { key, app, visitor, headers: {}, refund, streams: visitor && streamPools(app, visitor.id) };
  }

  /**
   * D-52, D-92: every request counts against its address's and its visitor's minute; a counted one
   * (a message, a conversation) against the app's widget budget and the visitor's and the address's
   * share of it too. Each limit takes its slot as it checks it (so that concurrent requests cannot pass
   * it together), and a later limit's refusal gives the earlier slots back: a refused request changes
   * nothing. Returns what gives the budget back when the handler refuses the request (a 404 costs nothing).
   */
  private async count(app: AppT, address: string, visitorId: string | undefined, charged: boolean) {
    const limits = app.widget!.limits;
    const windows: Taken[] = [];
    const budget: Taken[] = [];
    const giveBack = (taken: Taken[], from: MinuteWindows | RateCounts) => Promise.all(taken.map(([k, at]) => from.giveBack(k, at)));
    try {
      const where = `${app.id}|${address}`;
      windows.push(await this.window(`address|${where}`, limits.address_per_minute, 'address_rate_limit', app));
      const who = visitorId === undefined ? undefined : `${app.id}|${visitorId}`;
      if (who) windows.push(await this.window(`visitor|${who}`, limits.visitor_per_minute, 'visitor_rate_limit', app));
      if (!charged) return undefined;
      budget.push(
        await this.spend(app.id, limits.app_per_minute, limits.app_per_day, `App ${JSON.stringify(app.id)} has used its widget budget`),
      );
      if (who)
        budget.push(
          await this.spend(`visitor|${who}`, UNLIMITED, limits.visitor_per_day, "This visitor has used its share of the widget's budget"),
        );
      budget.push(
        await this.spend(`address|${where}`, UNLIMITED, limits.address_per_day, "This address has used its share of the widget's budget"),
      );
    } catch (err) {
      await Promise.all([giveBack(windows, this.o.windows), giveBack(budget, this.o.budget)]);
      throw err;
    }
    return async () => {
      await giveBack(budget, this.o.budget);
    };
  }

  private async window(key: string, perMinute: number, name: 'address_rate_limit' | 'visitor_rate_limit', app: AppT): Promise<Taken> {
    const taken = await this.o.windows.take(key, perMinute);
    if ('at' in taken) return [key, taken.at];
    const what =
      name === 'address_rate_limit'
        ? `Too many widget requests from this address for app ${JSON.stringify(app.id)}`
        : 'Too many requests from this visitor';
    const seconds = Math.max(1, Math.ceil(taken.retryAfterMs / 1000));
    throw apiError(name, `${what}: ${perMinute} per minute. Retry after ${seconds} s.`, { headers: { 'retry-after': String(seconds) } });
  }

  private async spend(key: string, perMinute: number, perDay: number, what: string): Promise<Taken> {
    const c = await this.o.budget.take(key, perMinute, perDay);
    if (c.taken) return [key, c.now];
    const { wait, byDay } = waitOf(c, perMinute, perDay);
    const seconds = Math.max(1, Math.ceil(wait / 1000));
    throw apiError(
      'widget_budget',
      `${what} (${byDay ? `${perDay} per day` : `${perMinute} per minute`}, apart from the REST plan); retry after ${seconds} s.`,
      { headers: { 'retry-after': String(seconds) } },
    );
  }

  /** D-47: the app, if it exists (404) and the tenants give it a widget (403). */
  private widgetApp(appId: string | undefined): AppT {
    const app = appId === undefined ? undefined : this.o.tenants.apps.get(appId);
    if (!app) throw apiError('not_found', `App ${JSON.stringify(appId ?? '')} not found.`, { param: 'app_id' });
    if (!app.widget) throw apiError('widget_disabled', `App ${JSON.stringify(app.id)} has no messenger widget.`);
    return app;
  }
}

/** D-92: a widget stream counts in the widget's pool and its visitor's, apart from the REST API's. */
function streamPools(app: AppT, visitorId: string): StreamPool[] {
  const { streams, visitor_streams } = app.widget!.limits;
  const name = JSON.stringify(app.id);
  return [
    {
      key: `widget\0${app.id}`,
      max: streams,
      refusal: () =>
        apiError('too_many_streams', `The widget of app ${name} already has ${streams} streams open; retry when one has finished.`),
    },
    {
      key: `visitor\0${app.id}\0${visitorId}`,
      max: visitor_streams,
      refusal: () =>
        apiError(
          'too_many_streams',
          `This visitor already has ${visitor_streams} streams open in app ${name}; retry when one has finished.`,
        ),
    },
  ];
}
