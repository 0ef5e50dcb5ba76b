// Chooses each app's engine: `agent.model` in the fixtures, overridden by PARLEY_MODEL (`local`,
// `ollama:<model>` or `openai:<model>`); Ollama is reached at OLLAMA_HOST, an OpenAI-compatible server
// at OPENAI_BASE_URL. Tapes (D-140) sit under both model engines, at the fetch their clients consume.
import type { AppT } from '../core/tenants.ts';
import type { FormTemplateT } from './forms.ts';
import { LocalEngine, LocalTesting } from './local.ts';
import { OllamaEngine } from './ollama.ts';
import { patientFetch } from './ollama-fetch.ts';
import { OpenAIEngine } from './openai.ts';
import { recordingFetch, replayingFetch, type TapeEngine, type TapeMode } from './tapes.ts';
import type { ModelEngine } from './types.ts';

export interface EngineOptions {
  /** PARLEY_MODEL: replaces every app's `agent.model`. */
  override?: string | null;
  /** OLLAMA_HOST: where Ollama listens (its default is the settings', src/settings.ts). */
  ollamaHost: string;
  /** Injectable for tests (msw intercepts the global fetch); the default has no time limits. */
  ollamaFetch?: typeof fetch;
  /** OPENAI_BASE_URL: where an OpenAI-compatible server listens; none by default (D-143). */
  openaiBaseUrl?: string | null;
  /** OPENAI_API_KEY: sent to that server only, never logged, taped or shown (D-144). */
  openaiApiKey?: string | null;
  /** Tests shorten the wait for the server's first byte (`model_timeout`). */
  openaiTimeoutMs?: number;
  /** D-140: record every model call, or answer every one from the tapes. */
  tapes?: TapeMode | null;
  /** Where a tape that cannot be written is reported. */
  warn?: (message: string) => void;
  forms: Map<string, FormTemplateT>;
}

export class ModelSpecError extends Error {}

export type ModelSpec = { kind: 'local' } | { kind: TapeEngine; model: string };

/** `local`, `ollama:<model>` or `openai:<model>`; anything else is a configuration mistake worth stopping for. */
export function parseModelSpec(spec: string): ModelSpec {
  if (spec === 'local') return { kind: 'local' };
  const m = /^(ollama|openai):(.+)$/.exec(spec);
  if (m && m[2]!.trim()) return { kind: m[1] as TapeEngine, model: m[2]!.trim() };
  throw new ModelSpecError(`model must be "local", "ollama:<model>" or "openai:<model>" (got ${JSON.stringify(spec)})`);
}

/** The fetch a model engine's client consumes: the network's, or the tapes' in front of it (D-140). */
function wireFetch(engine: TapeEngine, base: typeof fetch | undefined, opts: EngineOptions): typeof fetch {
  const tapes = opts.tapes;
  if (tapes && 'replay' in tapes) return replayingFetch(engine, tapes.replay, tapes.timing);
  const network = base ?? patientFetch();
  if (tapes && 'record' in tapes) return recordingFetch(network, engine, tapes.record, opts.warn ?? (() => {}), opts.openaiApiKey);
  return network;
}

export function createEngine(app: AppT, opts: EngineOptions): ModelEngine {
  const spec = parseModelSpec(opts.override || app.agent.model);
  if (spec.kind === 'ollama') {
    return new OllamaEngine({ host: opts.ollamaHost, model: spec.model, fetch: wireFetch('ollama', opts.ollamaFetch, opts) });
  }
  if (spec.kind === 'openai') {
    const replaying = opts.tapes && 'replay' in opts.tapes;
    // D-143: no default address; a replay sends nothing, so it needs none.
    if (!opts.openaiBaseUrl && !replaying) {
      throw new ModelSpecError(`app ${app.id}: model ${spec.kind}:${spec.model} needs OPENAI_BASE_URL (e.g. http://127.0.0.1:8080/v1)`);
    }
    return new OpenAIEngine({
      baseUrl: opts.openaiBaseUrl || 'http://replay.invalid/v1',
      apiKey: opts.openaiApiKey,
      model: spec.model,
      fetch: wireFetch('openai', undefined, opts),
      timeoutMs: opts.openaiTimeoutMs,
    });
  }
  const testing = LocalTesting.safeParse(app.agent.testing ?? {});
  if (!testing.success) {
    const issue = testing.error.issues[0]!;
    throw new ModelSpecError(`app ${app.id}: agent.testing.${issue.path.join('.')}: ${issue.message}`);
  }
  const forms = new Map([...opts.forms].filter(([name]) => app.agent.forms.includes(name)));
  return new LocalEngine({ forms, testing: testing.data });
}
