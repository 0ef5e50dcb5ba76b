// Regenerates the generated parts of docs/ and the README (`npm run docs`): the field tables of
// docs/interface.md, drawn from the zod contract through its OpenAPI document; in docs/decisions.md each
// decision's rule in one line (read from where it is written, scripts/decision-rules.ts) and the index of
// where each decision id is cited in src/, cli/, conformance/ and test/; and the README's configuration
// table, drawn from the settings' table (src/settings.ts). Generated parts sit between
// `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`; the rest of each file is written by hand.
// test/docs.test.ts fails when a committed file differs from what this produces.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { publishedDocuments } from '../src/api/routes.ts';
import { settingsTable } from '../src/config.ts';
import { decisionRules, readDocs, rulesTable } from './decision-rules.ts';

export const ROOT = path.resolve(import.meta.dirname, '..');

type Json = Record<string, any>;

/** Where decisions are cited, in this order. */
export const CITING_DIRS = ['src', 'cli', 'conformance', 'test'] as const;

// ---------------------------------------------------------------------------------------------
// Field tables
// ---------------------------------------------------------------------------------------------

function typeOf(s: Json): string {
  if (s.$ref) {
    const id = String(s.$ref).split('/').pop()!;
    return `[${id}](#${id.toLowerCase()})`;
  }
  if ('const' in s) return `\`${JSON.stringify(s.const)}\``;
  if (s.enum) return s.enum.map((v: unknown) => `\`${JSON.stringify(v)}\``).join(' or ');
  if (s.anyOf) return s.anyOf.map(typeOf).join(' or ');
  if (s.oneOf) return s.oneOf.map(typeOf).join(' or ');
  const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  const named = types.map((t) => {
    if (t === 'array') return `array of ${s.items ? typeOf(s.items) : 'any'}`;
    if (t === 'object' && s.additionalProperties && typeof s.additionalProperties === 'object' && s.additionalProperties.type) {
      return `object of ${typeOf(s.additionalProperties)}`;
    }
    return t;
  });
  return named.length > 0 ? named.join(' or ') : 'any JSON value';
}

function rulesOf(s: Json): string {
  const rules: string[] = [];
  const inner = s.anyOf?.find((x: Json) => x.type !== 'null') ?? s;
  if (inner.maxLength !== undefined) rules.push(`${inner.minLength ?? 0} to ${inner.maxLength} characters`);
  else if (inner.minLength !== undefined) rules.push(`at least ${inner.minLength} character${inner.minLength === 1 ? '' : 's'}`);
  if (inner.pattern) rules.push(`matches \`${inner.pattern}\``);
  if (inner.minimum !== undefined && inner.minimum > 0) rules.push(`≥ ${inner.minimum}`);
  if (inner.minimum === 0) rules.push('≥ 0');
  if (inner.description) rules.push(inner.description);
  return rules.join('; ');
}

/** One table of an object schema's fields: name, type, whether required, rules. */
export function fieldTable(schema: Json): string {
  const lines = ['| field | type | required | rules |', '|---|---|---|---|'];
  const required = new Set<string>(schema.required ?? []);
  for (const [name, field] of Object.entries<Json>(schema.properties ?? {})) {
    lines.push(
      `| \`${name}\` | ${typeOf(field).replace(/\|/g, '\\|')} | ${required.has(name) ? 'yes' : 'no'} | ${rulesOf(field).replace(/\|/g, '\\|')} |`,
    );
  }
  const extra = schema.additionalProperties;
  lines.push(
    '',
    extra === false
      ? 'Any other field is refused (D-1: `unknown_parameter`).'
      : 'Other fields may be added by later versions; a client ignores those it does not know.',
  );
  return lines.join('\n');
}

/** The table of a named schema of the contract, or of the variants of a union (items). */
export function schemaTable(id: string, schemas: Record<string, Json>): string {
  const s = schemas[id];
  if (!s) throw new Error(`no schema ${id} in the contract`);
  const variants: Json[] | undefined = s.oneOf ?? s.anyOf;
  if (!variants) return fieldTable(s);
  return variants.map((v) => `With \`type\` = ${typeOf(v.properties.type)}:\n\n${fieldTable(v)}`).join('\n\n');
}

// ---------------------------------------------------------------------------------------------
// Decision index
// ---------------------------------------------------------------------------------------------

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await fs.readdir(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(rel)));
    else if (/\.(ts|js)$/.test(entry.name)) out.push(rel);
  }
  return out.sort();
}

/** D-id → the files that cite it, in CITING_DIRS order. */
export async function decisionCitations(): Promise<Map<number, string[]>> {
  const cited = new Map<number, string[]>();
  for (const dir of CITING_DIRS) {
    for (const file of await filesUnder(dir)) {
      const text = await fs.readFile(path.join(ROOT, file), 'utf8');
      const ids = new Set<number>();
      for (const m of text.matchAll(/\bD-(\d+)\b/g)) ids.add(Number(m[1]));
      for (const id of ids) (cited.get(id) ?? cited.set(id, []).get(id)!).push(file);
    }
  }
  return cited;
}

export function decisionIndex(cited: Map<number, string[]>): string {
  const lines = ['| decision | cited in |', '|---|---|'];
  for (const id of [...cited.keys()].sort((a, b) => a - b)) {
    lines.push(
      `| D-${id} | ${cited
        .get(id)!
        .map((f) => `\`${f}\``)
        .join(', ')} |`,
    );
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Generated blocks
// ---------------------------------------------------------------------------------------------

const BLOCK = /<!-- generated:([^>]+?) -->\n([\s\S]*?)<!-- \/generated:\1 -->/g;

/** Replaces every generated block of `text` by what `render(name, current)` gives for it (`current`: its text now). */
export function fillBlocks(text: string, render: (name: string, current: string) => string): string {
  return text.replace(
    BLOCK,
    (_all, name: string, current: string) =>
      `<!-- generated:${name} -->\n${render(name, current.trimEnd()).trimEnd()}\n<!-- /generated:${name} -->`,
  );
}

/** The generated docs: file (relative to the root) → its expected content. */
export async function renderDocs(): Promise<Map<string, string>> {
  const schemas = publishedDocuments().data.components as Json;
  const cited = decisionIndex(await decisionCitations());
  const rules = rulesTable(decisionRules(await readDocs(ROOT)));
  const out = new Map<string, string>();
  const render = (name: string): string => {
    if (name === 'decision-index') return cited;
    if (name === 'decision-rules') return rules;
    if (name === 'settings') return settingsTable();
    const m = /^schema (\w+)$/.exec(name);
    if (m) return schemaTable(m[1]!, schemas.schemas);
    throw new Error(`unknown generated block ${name}`);
  };
  for (const file of ['docs/interface.md', 'docs/decisions.md', 'README.md']) {
    out.set(file, fillBlocks(await fs.readFile(path.join(ROOT, file), 'utf8'), render));
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [file, text] of await renderDocs()) {
    await fs.writeFile(path.join(ROOT, file), text);
    console.log(`wrote ${file}`);
  }
}
