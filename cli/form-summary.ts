// data_spec patches (§3, D-22) shown as the form they build: one readable line per patch (the form's
// title, button and description; then each field, its label, type and whether it is required),
// never the patch's JSON cut short. A patch of another shape is named by its op and path.

/** The longest value shown of a patch that does not build a form. */
const OTHER_MAX = 300;

type Patch = { op?: unknown; path?: unknown; value?: unknown };
type Field = { label?: unknown; name?: unknown; type?: unknown; required?: unknown; options?: unknown };

/** One line whatever the text holds: a line break or tab in a label would break the layout. */
const flat = (s: string) => s.replace(/\s+/g, ' ').trim();
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A value as a person reads it: strings quoted, objects and lists with spaces after their separators. */
export function readable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(readable).join(', ')}]`;
  if (isObject(v))
    return `{${Object.entries(v)
      .map(([k, x]) => `${k}: ${readable(x)}`)
      .join(', ')}}`;
  return flat(JSON.stringify(v) ?? String(v));
}

/** `• Topic (select: Product, Support; required)`: what a person filling the form sees of one field. */
export function fieldLine(f: Field): string {
  const label =
    typeof f.label === 'string' && f.label !== '' ? flat(f.label) : typeof f.name === 'string' ? flat(f.name) : '(unnamed field)';
  const type = typeof f.type === 'string' ? flat(f.type) : 'field';
  const options = Array.isArray(f.options) && f.options.length > 0 ? `: ${f.options.map((o) => flat(String(o))).join(', ')}` : '';
  return `  • ${label} (${type}${options}${f.required === true ? '; required' : ''})`;
}

function formLines(form: Record<string, unknown>): string[] {
  const title = typeof form.title === 'string' ? ` "${flat(form.title)}"` : '';
  const button = typeof form.submit_label === 'string' ? ` (button: ${flat(form.submit_label)})` : '';
  const description = typeof form.description === 'string' && form.description.trim() !== '' ? `: ${flat(form.description)}` : '';
  const fields = Array.isArray(form.fields) ? form.fields.filter(isObject).map(fieldLine) : [];
  return [`◆ form${title}${button}${description}`, ...fields];
}

/** The lines of one data_spec item's `data` (`{type: "patch", patch: {op, path, value}}`). */
export function patchLines(data: unknown): string[] {
  const patch: Patch = isObject(data) && isObject(data.patch) ? data.patch : {};
  const op = typeof patch.op === 'string' ? flat(patch.op) : '?';
  const path = typeof patch.path === 'string' ? flat(patch.path) : '?';
  if ((op === 'add' || op === 'replace') && isObject(patch.value)) {
    if (/^\/form$/.test(path)) return formLines(patch.value);
    const field = /^\/form\/fields\/(-|\d+)$/.exec(path);
    if (field && op === 'add') return [fieldLine(patch.value)];
    if (field) return [`${fieldLine(patch.value)} replaces field ${Number(field[1]) + 1}`];
  }
  // Not a form: the value as a person reads it, and only its start when it is long.
  const value = patch.value === undefined ? '' : ` ${readable(patch.value)}`;
  return [`◆ data_spec ${op} ${path}${value.length > OTHER_MAX ? `${value.slice(0, OTHER_MAX - 1)}…` : value}`];
}

/**
 * `text` broken at spaces into rows of at most `width` columns, each row after the first indented
 * like the text's own start plus two; a word longer than a row stays whole.
 */
export function wrapWords(text: string, width: number): string[] {
  const lead = /^ */.exec(text)![0];
  const rows: string[] = [];
  let row = '';
  for (const word of text.slice(lead.length).split(/ +/)) {
    if (row === '') row = `${lead}${word}`;
    else if ([...row].length + 1 + [...word].length > width) {
      rows.push(row);
      row = `${lead}  ${word}`;
    } else row += ` ${word}`;
  }
  rows.push(row);
  return rows;
}
