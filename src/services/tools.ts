// The tools the service offers the model and runs itself (D-21): knowledge_search over the app's
// knowledge base and, with generative UI, render_form, whose result becomes data_spec patches (D-22).
import type { DataSpecT } from '../contract/index.ts';
import { formPatches, type FormTemplateT } from '../engines/forms.ts';
import type { KnowledgeBase, SearchHit } from '../engines/knowledge.ts';
import type { ToolSpec } from '../engines/types.ts';

export interface ToolBox {
  specs: ToolSpec[];
  knowledge: KnowledgeBase | undefined;
  forms: Map<string, FormTemplateT>;
}

export interface ToolResult {
  /** What goes back to the model, as JSON text. */
  content: string;
  /** render_form: the patches that build the form. */
  patches?: DataSpecT[];
  /** What the exchange was about, for generated titles (D-8). */
  source?: { en: string; fr: string };
}

export function knowledgeSearchSpec(): ToolSpec {
  return {
    name: 'knowledge_search',
    description: "Search the app's knowledge base. Returns the best matching passages with the document they come from.",
    parameters: {
      type: 'object',
      properties: { query: { type: 'string', description: 'What to look for, in a few words' } },
      required: ['query'],
    },
  };
}

export function renderFormSpec(forms: string[]): ToolSpec {
  return {
    name: 'render_form',
    description: 'Show the user an interactive form. Use it when the user wants to contact the team, book something or give feedback.',
    parameters: {
      type: 'object',
      properties: { form: { type: 'string', enum: forms, description: 'Which form to show' } },
      required: ['form'],
    },
  };
}

function parseArgs(args: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(args) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Runs one tool call. Bad calls are answered with an `error` the model can read, never thrown. */
export function runTool(box: ToolBox, name: string, args: string): ToolResult {
  const offered = box.specs.some((s) => s.name === name);
  const a = parseArgs(args);
  if (!offered) return { content: JSON.stringify({ error: `no tool named ${name} is available` }) };
  if (!a) return { content: JSON.stringify({ error: 'arguments must be a JSON object' }) };
  if (name === 'knowledge_search') {
    const query = typeof a.query === 'string' ? a.query : '';
    if (!query.trim()) return { content: JSON.stringify({ error: 'query must be a non-empty string' }) };
    const results: SearchHit[] = box.knowledge?.search(query) ?? [];
    const best = results[0] ? box.knowledge?.document(results[0].document) : undefined;
    return {
      content: JSON.stringify({ query, results }),
      source: best ? { en: best.title, fr: best.title_fr } : undefined,
    };
  }
  const formName = typeof a.form === 'string' ? a.form : '';
  const form = box.forms.get(formName);
  if (!form)
    return {
      content: JSON.stringify({ error: `unknown form ${JSON.stringify(formName)}; choose one of ${[...box.forms.keys()].join(', ')}` }),
    };
  return {
    content: JSON.stringify({ form: formName, shown: true, submit_label: form.submit_label }),
    patches: formPatches(form),
    source: { en: form.title, fr: form.title_fr },
  };
}
