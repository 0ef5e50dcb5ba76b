// Generative UI forms (D-22): templates from `fixtures/forms/<name>.json`, and the RFC 6902 patches
// that build one step by step on the empty document `{}`.
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { DataSpecT } from '../contract/index.ts';
import { DataFileError } from '../core/errors.ts';

const Field = z.object({
  name: z.string().min(1),
  label: z.string().min(1),
  type: z.enum(['text', 'email', 'tel', 'textarea', 'date', 'time', 'number', 'select', 'rating', 'checkbox']),
  required: z.boolean(),
  options: z.array(z.string()).optional(),
});
const FormTemplate = z.object({
  title: z.string().min(1),
  title_fr: z.string().min(1),
  description: z.string(),
  submit_label: z.string().min(1),
  /** Words that make the embedded engine offer this form. */
  keywords: z.array(z.string()).min(1),
  fields: z.array(Field).min(1),
});
export type FormTemplateT = z.infer<typeof FormTemplate>;
export type FormField = z.infer<typeof Field>;

export async function loadForms(fixturesDir: string, names: Iterable<string>): Promise<Map<string, FormTemplateT>> {
  const out = new Map<string, FormTemplateT>();
  for (const name of new Set(names)) {
    const file = path.join(fixturesDir, 'forms', `${name}.json`);
    let raw: unknown;
    try {
      raw = JSON.parse(await fs.readFile(file, 'utf8'));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new DataFileError(file, code ? `form ${JSON.stringify(name)} cannot be read (${code})` : 'is not valid JSON');
    }
    const parsed = FormTemplate.safeParse(raw);
    if (!parsed.success) throw new DataFileError(file, `${parsed.error.issues[0]!.path.join('.')}: ${parsed.error.issues[0]!.message}`);
    out.set(name, parsed.data);
  }
  return out;
}

/**
 * D-22: the form's skeleton first, then one `add` per field appended to `/form/fields/-`, so a client
 * can render the form while it grows. Applied in order to `{}` they always succeed.
 */
export function formPatches(form: FormTemplateT): DataSpecT[] {
  const patches: DataSpecT[] = [
    {
      type: 'patch',
      patch: {
        op: 'add',
        path: '/form',
        value: { title: form.title, description: form.description, fields: [], submit_label: form.submit_label },
      },
    },
  ];
  for (const f of form.fields) {
    const value: Record<string, unknown> = { name: f.name, label: f.label, type: f.type, required: f.required };
    if (f.options) value.options = f.options;
    patches.push({ type: 'patch', patch: { op: 'add', path: '/form/fields/-', value } });
  }
  return patches;
}
