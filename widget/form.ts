// Generative UI (§6.3, D-22): the form document that `data_spec` patches build, the live form drawn
// from it, and the user turn a submission sends back (D-56).
import jsonpatch, { type Operation } from 'fast-json-patch';

export interface FormField {
  name: string;
  label: string;
  type: string;
  required: boolean;
  options?: string[];
}

export interface FormSpec {
  title?: string;
  description?: string;
  fields: FormField[];
  submit_label?: string;
}

/** Applies one RFC 6902 operation to the document (a copy: the document a listener saw stays as it was). */
export function applyPatch(doc: Record<string, unknown>, op: unknown): Record<string, unknown> {
  try {
    return jsonpatch.applyOperation(jsonpatch.deepClone(doc), op as Operation, true, false).newDocument as Record<string, unknown>;
  } catch {
    return doc; // D-22 says patches always apply; a bad one is skipped rather than breaking the panel
  }
}

export function formOf(doc: Record<string, unknown>): FormSpec | null {
  const form = doc.form as FormSpec | undefined;
  return form && typeof form === 'object' && Array.isArray(form.fields) ? form : null;
}

/** The first line of a submission: how the agent and the history recognise one (D-56). */
export const SUBMISSION_HEADER = 'Submitted the form';

/**
 * D-56: a submission as the next user turn, readable by people and models alike:
 *   Submitted the form "Contact us":
 *   - Full name: Ada Lovelace
 *   - Phone: (empty)
 * one line per field in the form's order; a value's own line breaks are indented under its line.
 */
export function submissionText(form: FormSpec, values: Record<string, string>): string {
  const lines = [`${SUBMISSION_HEADER} "${form.title ?? 'Form'}":`];
  for (const f of form.fields) {
    const v = (values[f.name] ?? '').trim();
    lines.push(`- ${f.label}: ${v === '' ? '(empty)' : v.replace(/\r?\n/g, '\n  ')}`);
  }
  return lines.join('\n');
}

const INPUT_TYPES = new Set(['text', 'email', 'tel', 'date', 'time', 'number']);
/** Keeps a submission well inside the interface's 32,000 characters of message content (D-15). */
const MAX_VALUE = 2000;

let formCount = 0;

/**
 * Draws `form` as a real <form>: a labelled control per field by its type, required marks, the
 * submit label. Everything comes from the agent, so every string is set as text, never as HTML.
 */
export function renderForm(form: FormSpec, onSubmit: (values: Record<string, string>) => void): HTMLFormElement {
  const n = ++formCount;
  const el = document.createElement('form');
  el.className = 'gen-form';
  el.noValidate = false;
  if (form.title) {
    const h = document.createElement('h3');
    h.id = `pw-form-${n}-title`;
    h.textContent = form.title;
    el.setAttribute('aria-labelledby', h.id);
    el.append(h);
  }
  if (form.description) {
    const p = document.createElement('p');
    p.className = 'gen-desc';
    p.textContent = form.description;
    el.append(p);
  }
  if (form.fields.some((f) => f.required)) {
    const p = document.createElement('p');
    p.className = 'gen-note';
    p.textContent = 'Fields marked * are required.';
    el.append(p);
  }
  // D-94: the values are read from these, not by name through the form (see `control.id`).
  const controls: Array<[FormField, HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement]> = [];
  for (const [i, f] of form.fields.entries()) {
    const id = `pw-form-${n}-${i}`;
    const row = document.createElement('div');
    row.className = `gen-field gen-${f.type}`;
    const label = document.createElement('label');
    label.htmlFor = id;
    label.textContent = f.label;
    if (f.required) {
      const mark = document.createElement('span');
      mark.className = 'req';
      mark.setAttribute('aria-hidden', 'true');
      mark.textContent = ' *';
      label.append(mark);
    }
    let control: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement;
    if (f.type === 'textarea') {
      control = document.createElement('textarea');
      control.rows = 3;
      control.maxLength = MAX_VALUE;
    } else if (f.type === 'select' || f.type === 'rating') {
      control = document.createElement('select');
      const options = f.type === 'rating' ? ['1', '2', '3', '4', '5'] : (f.options ?? []);
      const blank = document.createElement('option');
      blank.value = '';
      blank.textContent = f.type === 'rating' ? 'Choose a rating (1 to 5)' : 'Choose…';
      control.append(blank, ...options.map((o) => Object.assign(document.createElement('option'), { value: o, textContent: o })));
    } else if (f.type === 'checkbox') {
      control = document.createElement('input');
      control.type = 'checkbox';
      control.value = 'yes';
      row.classList.add('inline');
    } else {
      control = document.createElement('input');
      control.type = INPUT_TYPES.has(f.type) ? f.type : 'text';
      control.maxLength = MAX_VALUE;
      if (f.type === 'email') control.autocomplete = 'email';
      if (f.type === 'tel') control.autocomplete = 'tel';
    }
    // D-94: no `name`: a form answers its controls' names as its own properties (DOM clobbering), so a
    // field named `reportValidity`, `elements` or `append` would hide the form's own; ours are ids.
    control.id = id;
    controls.push([f, control]);
    control.required = f.required;
    if (f.type === 'checkbox') row.append(control, label);
    else row.append(label, control);
    el.append(row);
  }
  const submit = document.createElement('button');
  submit.type = 'submit';
  submit.className = 'primary';
  submit.textContent = form.submit_label ?? 'Submit form';
  el.append(submit);
  el.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!el.reportValidity()) return;
    const values: Record<string, string> = Object.create(null); // a field may be named `__proto__`
    for (const [f, c] of controls)
      values[f.name] = c instanceof HTMLInputElement && c.type === 'checkbox' ? (c.checked ? 'yes' : 'no') : c.value;
    onSubmit(values);
  });
  return el;
}

/**
 * D-59: while a reply streams the panel takes no new turn, a form's submission included; its submit
 * button is disabled meanwhile rather than ignoring a click.
 */
export function holdSubmit(el: HTMLFormElement, held: boolean): void {
  const button = el.querySelector<HTMLButtonElement>('button[type="submit"]');
  if (button && !el.classList.contains('sent')) button.disabled = held;
}

/** A submitted form stays visible as a record, no longer editable. */
export function markSubmitted(el: HTMLFormElement): void {
  el.classList.add('sent');
  for (const c of Array.from(el.elements)) (c as HTMLInputElement).disabled = true;
  const done = document.createElement('p');
  done.className = 'gen-note';
  done.textContent = 'Sent.';
  el.append(done);
}
