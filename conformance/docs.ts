// The generated parts of the conformance pages: in the guide (docs/conformance.md) the reference server's
// target file and the capabilities, in the reference (docs/conformance-reference.md) the broken
// implementations and variants that prove the suite, the clause matrix and the case list, drawn from the
// case registry and test/support/mutants.ts (`npm run conformance:docs`; `-- --check` exits 1 when a
// committed page is stale, and a test runs it). The rest of each page is written by hand; the generated
// parts sit between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`, as scripts/docs.ts keeps them.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fillBlocks } from '../scripts/docs.ts';
import { MUTANTS, VARIANTS } from '../test/support/mutants.ts';
import { CAPABILITIES, CAPABILITY_DEFS } from './capabilities.ts';
import { clauseMatrix, countsText, howChecked, matrixSummary, type MatrixRow } from './clauses.ts';
import { CASES, sectionTitle } from './registry.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const TARGET_JSON = await fs.readFile(path.join(ROOT, 'fixtures/target.json'), 'utf8');

/** The generated pages, and the blocks each holds, each once. */
export const PAGES = {
  'docs/conformance.md': ['target', 'capabilities'],
  'docs/conformance-reference.md': ['mutants', 'variants', 'clause-matrix', 'cases'],
} as const;
export type Page = keyof typeof PAGES;

const cell = (text: string) => text.replace(/\|/g, '\\|');
const where = (section: string) => (/^D-/.test(section) ? section : `§${section}`);

/**
 * D-77: the demo admin's password is written in clear in the README and the target file only; the
 * page shows the target with `…` in its place.
 */
function withoutPassword(targetJson: string): string {
  const password = (JSON.parse(targetJson) as { admin?: { password?: unknown } }).admin?.password;
  return typeof password === 'string' ? targetJson.replace(`"password": ${JSON.stringify(password)}`, '"password": "…"') : targetJson;
}

function renderBlock(name: string, targetJson: string): string {
  switch (name) {
    case 'target':
      return ['```json', withoutPassword(targetJson).trim(), '```'].join('\n');
    case 'capabilities':
      return renderCapabilities();
    case 'mutants':
      return renderMutants();
    case 'variants':
      return [
        '| variant | does | open in | departs from (caught in profile reference by) |',
        '|---|---|---|---|',
        ...VARIANTS.map(
          (v) =>
            `| \`${v.id}\` | ${cell(v.does)} | ${v.section.split(', ').map(where).join(', ')} | ${v.decision ? `${v.decision.id} (\`${v.decision.caughtBy}\`)` : v.alone ? `none; run alone with \`--timeout ${v.alone.timeoutMs} --settle-timeout ${v.alone.settleTimeoutMs}\`` : 'none'} |`,
        ),
      ].join('\n');
    case 'clause-matrix':
      return renderMatrix(clauseMatrix());
    case 'cases':
      return renderCases();
    default:
      throw new Error(`unknown generated block ${name}`);
  }
}

/** The page `file` with its generated blocks filled in; throws when one of its blocks is missing, repeated or another page's. */
export function generateDocs(file: Page, page: string, targetJson = TARGET_JSON): string {
  const seen: string[] = [];
  const out = fillBlocks(page, (name) => {
    seen.push(name);
    if (!(PAGES[file] as readonly string[]).includes(name)) throw new Error(`${file}: the generated block ${name} belongs to another page`);
    return renderBlock(name, targetJson);
  });
  for (const name of PAGES[file]) {
    const n = seen.filter((s) => s === name).length;
    if (n !== 1) throw new Error(`${file}: the generated block ${name} appears ${n} times (once expected)`);
  }
  return out;
}

/** Each capability: what it is, the target keys it needs when declared, and the cases that exercise it. */
function renderCapabilities(): string {
  return [
    '| capability | what it is | a target that declares it must have | cases (profile reference) |',
    '|---|---|---|---|',
    ...CAPABILITIES.map((name) => {
      const def = CAPABILITY_DEFS[name];
      const cases = CASES.filter((c) => c.capability === name);
      return `| \`${name}\` | ${cell(def.title)} | ${def.keys.map((k) => `\`${k}\``).join(', ') || 'no key'} | ${cases.length ? `${cases.length}: ${cases.map((c) => `\`${c.id}\``).join(', ')}` : 'none yet'} |`;
    }),
  ].join('\n');
}

function renderMutants(): string {
  const alone = MUTANTS.filter((m) => m.alone).map((m) => `\`${m.id}\` (${m.alone})`);
  return [
    `${MUTANTS.length} broken implementations, every one caught so.${alone.length ? ` Run alone rather than with the others through the whole spec profile: ${alone.join('; ')}.` : ''}`,
    '',
    '| broken implementation | breaks | profile | caught by |',
    '|---|---|---|---|',
    ...MUTANTS.map((m) => `| \`${m.id}\` | ${cell(m.breaks)} (${where(m.section)}) | ${m.profile} | \`${m.caughtBy}\` |`),
  ].join('\n');
}

function renderCases(): string {
  const out = [
    `${CASES.length} cases: ${CASES.filter((c) => c.level === 'MUST').length} MUST, ${CASES.filter((c) => c.level === 'REFERENCE').length} REFERENCE.`,
  ];
  let section = '';
  for (const c of CASES) {
    if (c.section !== section) {
      section = c.section;
      out.push(
        '',
        `### ${sectionTitle(section)}`,
        '',
        '| id | level | capability | needs | checks | clauses |',
        '|---|---|---|---|---|---|',
      );
    }
    out.push(
      `| \`${c.id}\` | ${c.level} | ${c.capability ? `\`${c.capability}\`` : ''} | ${(c.needs ?? []).map((n) => `\`${n}\``).join(', ')} | ${cell(c.description)} | ${clauseList(c.clauses)} |`,
    );
  }
  return out.join('\n');
}

/** A case's clauses, the per-endpoint rows of one group folded into one entry (`§5.6.missing-key@{create, list, …}`). */
function clauseList(ids: readonly string[]): string {
  const groups = new Map<string, string[]>();
  for (const id of ids) {
    const [head, endpoint] = id.split('@');
    groups.set(head!, [...(groups.get(head!) ?? []), ...(endpoint ? [endpoint] : [])]);
  }
  return [...groups].map(([head, eps]) => (eps.length ? `${head}@{${eps.join(', ')}}` : head)).join(', ');
}

/** The decisions the matrix holds, as ranges: `D-1…D-24, D-45, D-48…D-50`. */
function decisionRanges(rows: readonly MatrixRow[]): string {
  const ns = [...new Set(rows.filter((r) => r.id.startsWith('D-')).map((r) => Number(r.id.slice(2))))].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < ns.length; ) {
    let j = i;
    while (j + 1 < ns.length && ns[j + 1] === ns[j]! + 1) j++;
    out.push(
      j > i + 1
        ? `D-${ns[i]}…D-${ns[j]}`
        : ns
            .slice(i, j + 1)
            .map((n) => `D-${n}`)
            .join(', '),
    );
    i = j + 1;
  }
  return out.join(', ');
}

/** The clause → case matrix, by section: each clause, how it is checked (and why not exactly), and its cases. */
function renderMatrix(rows: readonly MatrixRow[]): string {
  const m = matrixSummary(rows);
  const decisions = rows.filter((r) => r.id.startsWith('D-')).length;
  const out = [
    `${m.clauses} clauses (${rows.length - decisions} of the interface, ${decisions} of the decisions ${decisionRanges(rows)}): ${countsText(m)} from outside.`,
  ];
  let section = '';
  for (const r of rows) {
    const group = r.section.startsWith('D-') ? 'D' : r.section.split('.')[0]!;
    if (group !== section) {
      section = group;
      out.push(
        '',
        `### ${group === 'D' ? 'Decisions (profile reference)' : `§${group}`}`,
        '',
        '| clause | says | checked | cases |',
        '|---|---|---|---|',
      );
    }
    const how = cell(howChecked(r));
    out.push(`| \`${r.id}\` | ${cell(r.text)} | ${how} | ${r.cases.map((c) => `\`${c.id}\``).join(', ')} |`);
  }
  return out.join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  for (const file of Object.keys(PAGES) as Page[]) {
    const committed = await fs.readFile(path.join(ROOT, file), 'utf8');
    const expected = generateDocs(file, committed);
    if (process.argv.includes('--check')) {
      if (committed !== expected) {
        console.error(`${file} is stale: run npm run conformance:docs`);
        process.exitCode = 1;
      } else console.log(`${file} is up to date`);
    } else await fs.writeFile(path.join(ROOT, file), expected);
  }
  if (!process.argv.includes('--check')) {
    console.log(
      `${Object.keys(PAGES).join(', ')}: ${CASES.length} cases, ${MUTANTS.length} broken implementations, ${VARIANTS.length} variants`,
    );
  }
}
