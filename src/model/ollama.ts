// Placeholder, replaced by the Ollama engine.
import type { ModelEngine, ModelEvent, ModelRequest } from './types.ts';
import { ModelError } from './types.ts';
export interface OllamaEngineOptions { host: string; model: string; fetch?: typeof fetch }
export class OllamaEngine implements ModelEngine {
  readonly id: string;
  constructor(private readonly opts: OllamaEngineOptions) { this.id = `ollama:${opts.model}`; }
  // eslint-disable-next-line require-yield
  async *generate(_r: ModelRequest, _s: AbortSignal): AsyncGenerator<ModelEvent> { throw new ModelError('model_unavailable', 'not yet'); }
  async title(): Promise<Record<'en-ca' | 'fr-ca', string>> { return { 'en-ca': '', 'fr-ca': '' }; }
}
