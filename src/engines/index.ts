// Chooses each app's engine: `agent.model` in the fixtures, overridden by PARLEY_MODEL
// (`local` or `ollama:<model>`); Ollama is reached at OLLAMA_HOST.
import type { AppT } from '../core/tenants.ts';
import type { FormTemplateT } from './forms.ts';
import { LocalEngine, LocalTesting } from './local.ts';
import { OllamaEngine, type OllamaEngineOptions } from './ollama.ts';
import type { ModelEngine } from './types.ts';

export interface EngineOptions {
  /** PARLEY_MODEL: replaces every app's `agent.model`. */
  override?: string | null;
  /** OLLAMA_HOST: where Ollama listens (its default is the settings', src/settings.ts). */
  ollamaHost: string;
  /** Injectable for tests (msw intercepts the global fetch); the default has no time limits. */
  ollamaFetch?: OllamaEngineOptions['fetch'];
  forms: Map<string, FormTemplateT>;
}

export class ModelSpecError extends Error {}

/** `local` or `ollama:<model>`; anything else is a configuration mistake worth stopping for. */
export function parseModelSpec(spec: string): { kind: 'local' } | { kind: 'ollama'; model: string } {
  if (spec === 'local') return { kind: 'local' };
  const m = /^ollama:(.+)$/.exec(spec);
  if (m && m[1]!.trim()) return { kind: 'ollama', model: m[1]!.trim() };
  throw new ModelSpecError(`model must be "local" or "ollama:<model>" (got ${JSON.stringify(spec)})`);
}

export function createEngine(app: AppT, opts: EngineOptions): ModelEngine {
  const spec = parseModelSpec(opts.override || app.agent.model);
  if (spec.kind === 'ollama') {
    return new OllamaEngine({ host: opts.ollamaHost, model: spec.model, fetch: opts.ollamaFetch });
  }
  const testing = LocalTesting.safeParse(app.agent.testing ?? {});
  if (!testing.success) {
    const issue = testing.error.issues[0]!;
    throw new ModelSpecError(`app ${app.id}: agent.testing.${issue.path.join('.')}: ${issue.message}`);
  }
  const forms = new Map([...opts.forms].filter(([name]) => app.agent.forms.includes(name)));
  return new LocalEngine({ forms, testing: testing.data });
}
