// The widget API's gate (docs/widget.md), in place of the REST API's auth and rate-limit stages:
// origins and CORS (D-53), the publishable key or a visitor token (D-48, D-49), and the widget's own
// limits (D-52). Order (D-54): app known (404) → widget enabled (403) → origin (403) → credential
// (401) → key's team (403) → app active, agent (403) → limits (429) → body (400) → resource (404).
import type { IncomingMessage } from 'node:http';
import { apiError } from '../http/errors.ts';
import type { HttpMethod } from '../http/router.ts';
import type { Route } from '../http/surface.ts';
import type { Admission, RateLimiter, SurfaceGate } from './stages.ts';
import type { AppT, Tenants, KeyT } from '../core/tenants.ts';
import type { MinuteWindows } from '../store/shared.ts';
import type { AuthService } from './auth.ts';
import type { VisitorTokens } from './widget-tokens.ts';

/** Headers a widget may read from an answer (a browser hides the others from a cross-origin page). */
const EXPOSED =
  'x-request-id, retry-after, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, x-ratelimit-reset-requests, parley-response-id';

export interface WidgetGateOptions {
  tenants: Tenants;
  auth: AuthService;
  tokens: VisitorTokens;
  /** D-52: the apps' widget budgets, counted apart from their REST plans, with the plans of `budgetPlans`. */
  budget: RateLimiter;
  /** D-52's per-visitor and per-address windows. */
  windows: MinuteWindows;
  /** D-53: the server's own origin is allowed too (the playground); off with --no-playground. */
  allowOwnOrigin: boolean;
}

type BudgetPlan = { id: string; requests_per_minute: number; requests_per_day: number };

export class WidgetGate implements SurfaceGate {
  constructor(private readonly o: WidgetGateOptions) {}

  /** The widget budgets as plans, one per app with a widget, for a RateLimitService of their own; rebuilt when the registry moves (D-78). */
  static budgetPlans(tenants: Tenants): { readonly plans: ReadonlyMap<string, BudgetPlan> } {
    let builtFrom = Number.NaN;
    let plans = new Map<string, BudgetPlan>();
    return {
      get plans() {
        if (builtFrom === tenants.version) return plans;
        plans = new Map();
        for (const app of tenants.apps.values()) {
          if (app.widget)
            plans.set(budgetPlan(app), {
              id: budgetPlan(app),
              requests_per_minute: app.widget.limits.app_per_minute,
              requests_per_day: app.widget.limits.app_per_day,
            });
        }
        builtFrom = tenants.version;
        return plans;
      },
    };
  }

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
      'access-control-allow-headers': 'authorization, content-type',
      'access-control-max-age': '600',
    };
  }

  async admit(req: IncomingMessage, params: Record<string, string>, route: Route): Promise<Admission> {
    const app = this.widgetApp(params.app_id);
    let key: KeyT;
    let visitor: Admission['visitor'];
    if (route.publishable) {
      key = this.o.auth.authenticate(req.headers.authorization);
      if (key.type !== 'publishable') {
        throw apiError('access_denied', 'The widget API takes the publishable key (pk_live_…): a secret key must never reach a browser.');
      }
    } else {
      const token = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '')?.[1];
      if (!token)
        throw apiError(
          'invalid_visitor_token',
          'Missing visitor token: send Authorization: Bearer <visitor token>, from POST /widget/v1/apps/{app_id}/visitors.',
        );
      const verified = this.o.tokens.verify(token, app);
      // A key taken out of the registry takes its visitors' tokens with it.
      const found = this.o.tenants.keys.find((k) => k.id === verified.keyId);
      if (!found) throw apiError('invalid_visitor_token', 'The key this visitor token was issued with no longer exists.');
      key = found;
      visitor = verified.visitor;
    }
    if (key.team_id !== app.team_id)
      throw apiError('access_denied', `This publishable key has no access to app ${JSON.stringify(app.id)}.`);
    if (!app.active) throw apiError('app_inactive', `App ${JSON.stringify(app.id)} is disabled.`);
    if (route.needsAgent && !app.agent.active)
      throw apiError('agent_unavailable', `App ${JSON.stringify(app.id)} has no active agent configured.`);
    if (req.method === 'POST') await this.count(req, app, visitor?.id, route.counted ?? false);
    return { key, app, visitor, headers: {} };
  }

  /**
   * D-52: a POST counts against its address and its visitor, a message against the app's widget budget
   * too. Each limit takes its slot as it checks it (so that concurrent requests cannot pass it together),
   * and a later limit's refusal gives the earlier slots back: a refused request changes nothing.
   */
  private async count(req: IncomingMessage, app: AppT, visitorId: string | undefined, message: boolean): Promise<void> {
    const limits = app.widget!.limits;
    const address = `address|${app.id}|${req.socket.remoteAddress ?? ''}`;
    const byAddress = await this.o.windows.take(address, limits.address_per_minute);
    if (!('at' in byAddress))
      throw limited(
        'address_rate_limit',
        `Too many widget requests from this address for app ${JSON.stringify(app.id)}`,
        limits.address_per_minute,
        byAddress.retryAfterMs,
      );
    const taken: Array<[string, number]> = [[address, byAddress.at]];
    const giveBack = () => Promise.all(taken.map(([key, at]) => this.o.windows.giveBack(key, at)));
    if (visitorId !== undefined) {
      const visitor = `visitor|${app.id}|${visitorId}`;
      const byVisitor = await this.o.windows.take(visitor, limits.visitor_per_minute);
      if (!('at' in byVisitor)) {
        await giveBack();
        throw limited('visitor_rate_limit', 'Too many requests from this visitor', limits.visitor_per_minute, byVisitor.retryAfterMs);
      }
      taken.push([visitor, byVisitor.at]);
    }
    if (!message) return;
    try {
      await this.o.budget.take({ ...app, plan: budgetPlan(app) });
    } catch (err) {
      await giveBack();
      const retry = (err as { headers?: Record<string, string> }).headers?.['retry-after'] ?? '60';
      throw apiError(
        'widget_budget',
        `App ${JSON.stringify(app.id)} has used its widget budget (apart from its REST plan); retry after ${retry} s.`,
        { headers: { 'retry-after': retry } },
      );
    }
  }

  /** D-47: the app, if it exists (404) and the tenants give it a widget (403). */
  private widgetApp(appId: string | undefined): AppT {
    const app = appId === undefined ? undefined : this.o.tenants.apps.get(appId);
    if (!app) throw apiError('not_found', `App ${JSON.stringify(appId ?? '')} not found.`, { param: 'app_id' });
    if (!app.widget) throw apiError('widget_disabled', `App ${JSON.stringify(app.id)} has no messenger widget.`);
    return app;
  }
}

function budgetPlan(app: AppT): string {
  return `widget:${app.id}`;
}

function limited(name: 'address_rate_limit' | 'visitor_rate_limit', what: string, perMinute: number, retryAfterMs: number) {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return apiError(name, `${what}: ${perMinute} per minute. Retry after ${seconds} s.`, { headers: { 'retry-after': String(seconds) } });
}
