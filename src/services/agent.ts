// The agent of each app: its engine, knowledge base, forms and the tools it is offered, set up once
// at start-up so that a request only looks them up.
import type { Dirent } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { loadForms, type FormTemplateT } from '../engines/forms.ts';
import { createEngine, type EngineOptions } from '../engines/index.ts';
import { loadKnowledgeBases, type KnowledgeBase } from '../engines/knowledge.ts';
import { LocalEngine } from '../engines/local.ts';
import type { ChatMessage, ModelEngine, ModelRequest, TitleRequest } from '../engines/types.ts';
import type { AppT, Tenants } from '../core/tenants.ts';
import { DataFileError } from '../core/errors.ts';
import { knowledgeSearchSpec, renderFormSpec, type ToolBox } from './tools.ts';

export type AgentEngineOptions = Omit<EngineOptions, 'forms'>;

/** What an engine is made from. */
function settingsOf(app: AppT): string {
  return JSON.stringify(app.agent);
}

/** The names `pick` gives the entries of `dir` (none if it does not exist). */
async function entries(dir: string, pick: (e: Dirent) => string | false): Promise<string[]> {
  const list = await fs.readdir(dir, { withFileTypes: true }).catch(() => [] as Dirent[]);
  return list.flatMap((e) => pick(e) || []);
}

export class AgentRuntime {
  /** Each app's engine, with the settings it was made from (an app changed while running gets a new one). */
  private readonly engines = new Map<string, { app: AppT; settings: string; engine: ModelEngine }>();

  private constructor(
    private readonly knowledge: Map<string, KnowledgeBase>,
    private readonly forms: Map<string, FormTemplateT>,
    private readonly opts: AgentEngineOptions,
  ) {}

  /**
   * Reads every knowledge base and form of the fixtures directory (an app created or changed while
   * Parley runs may name any of them, D-71) and makes each app's engine, so that a bad setting stops
   * the start rather than a request.
   */
  static async load(tenants: Tenants, opts: AgentEngineOptions): Promise<AgentRuntime> {
    const apps = [...tenants.apps.values()];
    const knowledge = await loadKnowledgeBases(tenants.dir, [
      ...apps.flatMap((a) => (a.agent.knowledge_base ? [a.agent.knowledge_base] : [])),
      ...(await entries(path.join(tenants.dir, 'knowledge'), (e) => e.isDirectory() && e.name)),
    ]);
    const forms = await loadForms(tenants.dir, [
      ...apps.flatMap((a) => a.agent.forms),
      ...(await entries(path.join(tenants.dir, 'forms'), (e) => e.isFile() && e.name.endsWith('.json') && e.name.slice(0, -5))),
    ]);
    const runtime = new AgentRuntime(knowledge, forms, opts);
    for (const app of apps) {
      try {
        runtime.engine(app);
      } catch (err) {
        throw new DataFileError(`${tenants.dir}/fixtures.json`, (err as Error).message);
      }
    }
    return runtime;
  }

  /** The knowledge bases a change may name (D-71). */
  hasKnowledgeBase(name: string): boolean {
    return this.knowledge.has(name);
  }

  /** D-8: the embedded engine's title, when a real model could not give one. */
  fallbackTitle(req: TitleRequest): Promise<Record<'en-ca' | 'fr-ca', string>> {
    return new LocalEngine({ forms: this.forms }).title(req);
  }

  /** The app's engine, made again when its agent's settings changed (D-78: the registry is live). */
  engine(app: AppT): ModelEngine {
    const made = this.engines.get(app.id);
    // The registry hands out the same object until the document changes: compared first, it spares a request the settings' text.
    if (made?.app === app) return made.engine;
    const settings = settingsOf(app);
    if (made?.settings === settings) {
      made.app = app;
      return made.engine;
    }
    const engine = createEngine(app, { ...this.opts, forms: this.forms });
    this.engines.set(app.id, { app, settings, engine });
    return engine;
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
