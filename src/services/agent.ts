// The agent of each app: its engine, knowledge base, forms and the tools it is offered, set up once
// at start-up so that a request only looks them up.
import { loadForms, type FormTemplateT } from '../engines/forms.ts';
import { createEngine, type EngineOptions } from '../engines/index.ts';
import { loadKnowledgeBases, type KnowledgeBase } from '../engines/knowledge.ts';
import { LocalEngine } from '../engines/local.ts';
import type { ChatMessage, ModelEngine, ModelRequest, TitleRequest } from '../engines/types.ts';
import type { AppT, Tenants } from '../core/tenants.ts';
import { DataFileError } from '../core/errors.ts';
import { knowledgeSearchSpec, renderFormSpec, type ToolBox } from './tools.ts';

export type AgentEngineOptions = Omit<EngineOptions, 'forms'>;

export class AgentRuntime {
  private constructor(
    private readonly engines: Map<string, ModelEngine>,
    private readonly knowledge: Map<string, KnowledgeBase>,
    private readonly forms: Map<string, FormTemplateT>,
  ) {}

  static async load(tenants: Tenants, opts: AgentEngineOptions = {}): Promise<AgentRuntime> {
    const apps = [...tenants.apps.values()];
    const knowledge = await loadKnowledgeBases(
      tenants.dir,
      apps.flatMap((a) => (a.agent.knowledge_base ? [a.agent.knowledge_base] : [])),
    );
    const forms = await loadForms(
      tenants.dir,
      apps.flatMap((a) => a.agent.forms),
    );
    const engines = new Map<string, ModelEngine>();
    for (const app of apps) {
      try {
        engines.set(app.id, createEngine(app, { ...opts, forms }));
      } catch (err) {
        throw new DataFileError(`${tenants.dir}/fixtures.json`, (err as Error).message);
      }
    }
    return new AgentRuntime(engines, knowledge, forms);
  }

  /** D-8: the embedded engine's title, when a real model could not give one. */
  fallbackTitle(req: TitleRequest): Promise<Record<'en-ca' | 'fr-ca', string>> {
    return new LocalEngine({ forms: this.forms }).title(req);
  }

  engine(app: AppT): ModelEngine {
    return this.engines.get(app.id)!;
  }

  /** §4.6: every tool the app has; §4.7: only knowledge_search, and only when asked for. */
  tools(app: AppT, kind: 'response' | 'completion', knowledgeSearch = true): ToolBox {
    const knowledge = app.agent.knowledge_base ? this.knowledge.get(app.agent.knowledge_base) : undefined;
    const forms = new Map(
      kind === 'response' && app.generative_ui
        ? app.agent.forms.flatMap((n) => (this.forms.has(n) ? [[n, this.forms.get(n)!] as const] : []))
        : [],
    );
    const specs = [];
    if (knowledge && knowledgeSearch) specs.push(knowledgeSearchSpec());
    if (forms.size > 0) specs.push(renderFormSpec([...forms.keys()]));
    return { specs, knowledge, forms };
  }

  request(
    app: AppT,
    kind: 'response' | 'completion',
    tools: ToolBox,
    messages: ChatMessage[],
    metadata: Record<string, unknown>,
    fast: boolean,
  ): ModelRequest {
    return { kind, agentName: app.agent.name, instructions: app.agent.instructions, metadata, messages, tools: tools.specs, fast };
  }
}
