// A team's apps on the admin surface (docs/control-plane.md, D-71): list, get, create and update. A
// change is one control-plane change (D-76), so the live registry serves it to the next request (D-78);
// the widget's identity secret is taken but never shown back in full.
import type { AdminAppT, UpdateAppRequestT } from '../../contract/admin.ts';
import type { ControlDocT } from '../../core/control.ts';
import { newId } from '../../core/ids.ts';
import { type AppT, Widget } from '../../core/tenants.ts';
import type { AdminCaller } from '../../core/callers.ts';
import { invalidRequest } from '../../core/api-errors.ts';
import type { ControlPlane } from '../../store/control.ts';
import { actorOf, auditOf, type Origin } from './accounts.ts';
import { type TeamCaps, checkCap } from './caps.ts';
import { teamApp } from './team.ts';

/** What the apps service checks a change against: the knowledge bases there are, and whether an agent's settings make an engine. */
export interface AgentCatalogue {
  hasKnowledgeBase(name: string): boolean;
  engine(app: AppT): unknown;
}

/** D-71: `…` and the last four characters: enough to tell which secret is set, never enough to use it. */
export function redactedSecret(secret: string | null | undefined): string | null {
  return secret ? `…${secret.slice(-4)}` : null;
}

export function appView(a: AppT): AdminAppT & { object: 'app' } {
  return {
    id: a.id,
    object: 'app',
    name: a.name,
    active: a.active,
    stream: a.stream,
    generative_ui: a.generative_ui,
    plan: a.plan,
    agent: {
      active: a.agent.active,
      name: a.agent.name,
      instructions: a.agent.instructions,
      model: a.agent.model,
      knowledge_base: a.agent.knowledge_base,
    },
    widget: a.widget
      ? {
          origins: a.widget.origins,
          identity_secret_set: a.widget.identity_secret !== null,
          identity_secret_redacted: redactedSecret(a.widget.identity_secret),
        }
      : null,
  };
}

/**
 * D-75: an app's settings as the audit log records them, field by dotted field: the identity secret
 * by its redacted form only.
 */
function auditFields(a: AppT | undefined): Record<string, unknown> {
  if (!a) return {};
  const v = appView(a);
  return {
    name: v.name,
    active: v.active,
    stream: v.stream,
    generative_ui: v.generative_ui,
    plan: v.plan,
    'agent.active': v.agent.active,
    'agent.name': v.agent.name,
    'agent.instructions': v.agent.instructions,
    'agent.model': v.agent.model,
    'agent.knowledge_base': v.agent.knowledge_base,
    widget: v.widget !== null,
    'widget.origins': v.widget?.origins ?? null,
    'widget.identity_secret': v.widget?.identity_secret_redacted ?? null,
  };
}

/** Field → [before, after] for every field that differs. */
function diff(before: AppT | undefined, after: AppT): Record<string, [unknown, unknown]> {
  const b = auditFields(before);
  const a = auditFields(after);
  const out: Record<string, [unknown, unknown]> = {};
  for (const [k, v] of Object.entries(a)) {
    const was = k in b ? b[k] : null;
    if (JSON.stringify(was) !== JSON.stringify(v)) out[k] = [was, v];
  }
  return out;
}

/** D-71: what an app created with only a name gets (the fixtures' demo agent's colours). */
function newApp(teamId: string, name: string, plan: string): AppT {
  return {
    id: newId('app'),
    team_id: teamId,
    name,
    plan,
    active: true,
    stream: false,
    generative_ui: false,
    agent: {
      active: true,
      name: 'Assistant',
      config: { primary_color: '#1f6feb', secondary_color: '#f6f8fa' },
      instructions: '',
      model: 'local',
      knowledge_base: null,
      forms: [],
    },
    responses: { max_duration_seconds: 600, max_detached: 16 },
  };
}

/** D-71: a new app's plan, unless it names one: the plan of the team's first app, else the first plan there is. */
function defaultPlan(doc: ControlDocT, teamId: string): string {
  return doc.apps.find((a) => a.team_id === teamId)?.plan ?? doc.plans[0]?.id ?? 'default';
}

export class AppAdminService {
  constructor(
    private readonly control: ControlPlane,
    private readonly agents: AgentCatalogue,
    private readonly caps: TeamCaps,
  ) {}

  list(c: AdminCaller) {
    return this.control
      .read()
      .apps.filter((a) => a.team_id === c.team_id)
      .map(appView);
  }

  get(c: AdminCaller, id: string) {
    return appView(this.own(this.control.read(), c, id));
  }

  async create(c: AdminCaller, req: UpdateAppRequestT & { name: string }, origin: Origin) {
    let id = '';
    const doc = await this.control.apply((d) => {
      checkCap(d, this.caps, 'apps', c.team_id, 0);
      const app = newApp(c.team_id, req.name, defaultPlan(d, c.team_id));
      id = app.id;
      this.applyChange(d, app, req);
      d.apps.push(app);
      return [auditOf(origin, c.team_id, 'app.created', actorOf(c), { type: 'app', id }, diff(undefined, app))];
    });
    return appView(doc.apps.find((a) => a.id === id)!);
  }

  async update(c: AdminCaller, id: string, req: UpdateAppRequestT, origin: Origin) {
    // A request that leaves the app as it is (or is refused) is answered without a step of the document.
    const seen = structuredClone(this.control.read());
    const probe = this.own(seen, c, id);
    const current = structuredClone(probe);
    this.applyChange(seen, probe, req);
    if (Object.keys(diff(current, probe)).length === 0) return appView(current);
    const doc = await this.control.apply((d) => {
      const app = this.own(d, c, id);
      const before = structuredClone(app);
      this.applyChange(d, app, req);
      return [auditOf(origin, c.team_id, 'app.updated', actorOf(c), { type: 'app', id }, diff(before, app))];
    });
    return appView(doc.apps.find((a) => a.id === id)!);
  }

  /** An app of the caller's team, or 404 (another team's too: D-65). */
  private own(doc: ControlDocT, c: AdminCaller, id: string): AppT {
    return teamApp(doc, c, id);
  }

  /** Applies `req` to `app` (in the draft `d`), checking what the contract cannot: the plan, the knowledge base, the engine. */
  private applyChange(d: ControlDocT, app: AppT, req: UpdateAppRequestT): void {
    if (req.name !== undefined) app.name = req.name;
    if (req.active !== undefined) app.active = req.active;
    if (req.stream !== undefined) app.stream = req.stream;
    if (req.generative_ui !== undefined) app.generative_ui = req.generative_ui;
    if (req.plan !== undefined) {
      if (!d.plans.some((p) => p.id === req.plan))
        throw invalidRequest(
          `There is no plan ${JSON.stringify(req.plan)}: one of ${d.plans.map((p) => p.id).join(', ')}.`,
          'plan',
          'invalid_value',
        );
      app.plan = req.plan;
    }
    const agent = req.agent;
    if (agent) {
      if (agent.active !== undefined) app.agent.active = agent.active;
      if (agent.name !== undefined) app.agent.name = agent.name;
      if (agent.instructions !== undefined) app.agent.instructions = agent.instructions;
      if (agent.knowledge_base !== undefined) {
        if (agent.knowledge_base !== null && !this.agents.hasKnowledgeBase(agent.knowledge_base))
          throw invalidRequest(
            `There is no knowledge base ${JSON.stringify(agent.knowledge_base)} in the fixtures' knowledge/ folder.`,
            'agent.knowledge_base',
            'invalid_value',
          );
        app.agent.knowledge_base = agent.knowledge_base;
      }
      if (agent.model !== undefined) {
        app.agent.model = agent.model;
        try {
          this.agents.engine(app);
        } catch (err) {
          throw invalidRequest(`The engine cannot be made: ${(err as Error).message}`, 'agent.model', 'invalid_value');
        }
      }
    }
    if (req.widget === null) delete app.widget;
    else if (req.widget) {
      const widget = app.widget ?? Widget.parse({});
      if (req.widget.origins !== undefined) widget.origins = [...new Set(req.widget.origins)];
      if (req.widget.identity_secret !== undefined) widget.identity_secret = req.widget.identity_secret;
      app.widget = widget;
    }
  }
}
