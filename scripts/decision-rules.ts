// Each decision's current rule in one line, read from where the decision is written (docs/*.md), for
// the table of docs/decisions.md (`npm run docs`). A decision is written in one of two forms:
// - a paragraph or bullet that opens with its id in bold: `**D-n Rule.** details` (the bold text is the
//   rule) or `**D-n** Rule. details` (the first sentence is the rule);
// - a heading `## D-n Title`, whose first paragraph's first sentence is the rule.
// A bold `**D-n (revised): …**` or `**D-n, extended: …**` amends an earlier one, and its text is added to
// the line; other bold repeats (`**D-n (2) …**`, `**D-n, export.**`) are parts of a long decision. Which
// decision revised which is read from the decisions' own text: "revised by D-m" in D-n's paragraph, or
// "revises D-n" at the head of D-m's.
import fs from 'node:fs/promises';
import path from 'node:path';

export interface DecisionRule {
  id: number;
  /** The docs/ file that holds it, e.g. `responses.md`. */
  file: string;
  rule: string;
  /** Amendments written as their own bold paragraphs: `Revised: …`, `Extended: …`. */
  amendments: string[];
  /** Ids of the decisions that revised this one, in order. */
  revisedBy: number[];
}

interface Written {
  id: number;
  file: string;
  /** The text in bold after the id (`''` for `**D-n**`), or the heading's title. */
  lead: string;
  /** The rest of the paragraph, on one line. */
  body: string;
  heading: boolean;
}

const BOLD_OPEN = /^(?:- )?\*\*D-(\d+)(?=[\s*,(:])/;
const HEADING = /^#{2,4} D-(\d+)\b ?(.*)$/;

/** A paragraph (or a bullet with its indented continuation) starting at `lines[i]`, joined on one line. */
function paragraphAt(lines: string[], i: number): string {
  const out = [lines[i]!.trim()];
  for (let j = i + 1; j < lines.length; j++) {
    const line = lines[j]!;
    if (line.trim() === '' || /^(- |#|\|)/.test(line) || (/^\S/.test(line) && lines[i]!.startsWith('- '))) break;
    out.push(line.trim());
  }
  return out.join(' ');
}

/** Every place of `text` where a decision is written, in order. */
export function writtenDecisions(file: string, text: string): Written[] {
  const lines = text.replace(/<!-- generated:([^>]+?) -->\n[\s\S]*?<!-- \/generated:\1 -->/g, '').split('\n');
  const out: Written[] = [];
  let fenced = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) continue;
    const heading = HEADING.exec(line);
    if (heading) {
      let j = i + 1;
      while (j < lines.length && lines[j]!.trim() === '') j++;
      const first = j < lines.length ? paragraphAt(lines, j).replace(/^- /, '') : '';
      out.push({ id: Number(heading[1]), file, lead: heading[2]!.trim(), body: first, heading: true });
      continue;
    }
    if (!BOLD_OPEN.test(line)) continue;
    const m = /^(?:- )?\*\*D-(\d+)(.*?)\*\*:?\s*(.*)$/.exec(paragraphAt(lines, i));
    if (m) out.push({ id: Number(m[1]), file, lead: m[2]!.trim(), body: m[3]!.trim(), heading: false });
  }
  return out;
}

/** The first sentence of `text`: up to the first full stop that ends a sentence outside brackets and code. */
export function firstSentence(text: string): string {
  let depth = 0;
  let code = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '`') code = !code;
    if (code) continue;
    if (c === '(' || c === '[') depth++;
    if ((c === ')' || c === ']') && depth > 0) depth--;
    if (depth === 0 && (c === '.' || c === '!' || c === '?') && (i + 1 === text.length || /\s/.test(text[i + 1]!))) {
      const word = /(\S+)$/.exec(text.slice(0, i))?.[1] ?? '';
      if (/^(e\.g|i\.e|etc|vs|cf)$/i.test(word)) continue;
      return text.slice(0, i + 1);
    }
  }
  return text;
}

/** A leading parenthesis of a body, e.g. `(revised by D-39, …)`, and what follows it. */
function leadingParen(body: string): { paren: string; rest: string } {
  if (!body.startsWith('(')) return { paren: '', rest: body };
  let depth = 0;
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '(') depth++;
    if (body[i] === ')' && --depth === 0) return { paren: body.slice(0, i + 1), rest: body.slice(i + 1).trim() };
  }
  return { paren: '', rest: body };
}

const idsIn = (list: string): number[] => [...list.matchAll(/D-(\d+)/g)].map((m) => Number(m[1]));
const ID_LIST = String.raw`D-\d+(?:(?:,\s*|,?\s+and\s+)D-\d+)*`;

/** The ids after "revised by" in `text`. */
function revisersNamed(text: string): number[] {
  return [...text.matchAll(new RegExp(`revised by (${ID_LIST})`, 'gi'))].flatMap((m) => idsIn(m[1]!));
}

/** The ids after "revises" in the head of a decision (its bold lead or its leading parenthesis). */
function revisedNamed(head: string): number[] {
  return [...head.matchAll(new RegExp(`revises (${ID_LIST})`, 'gi'))].flatMap((m) => idsIn(m[1]!));
}

type Kind = 'rule' | 'amendment' | 'part';

function kindOf(w: Written): Kind {
  if (w.heading) return 'rule';
  if (/^(,\s*extended|\(revised|,\s*revised)/i.test(w.lead)) return 'amendment';
  if (/^(\(\d+\)|,)/.test(w.lead)) return 'part';
  return 'rule';
}

const tidy = (s: string): string => s.replace(/\s+/g, ' ').trim();

/** The one-line rule of a decision's main paragraph. */
function ruleOf(w: Written): string {
  const { paren, rest } = leadingParen(w.body);
  if (w.heading) return tidy(firstSentence(rest || paren));
  // A bold lead is the rule; "(1) …" after it names the first of its parts.
  const lead = tidy(w.lead.replace(/\s\(1\)\s.*$/, ''));
  return lead !== '' ? lead : tidy(firstSentence(rest));
}

function amendmentOf(w: Written): string {
  const word = /extended/i.test(w.lead) ? 'Extended' : 'Revised';
  const text = tidy(w.lead.replace(/^(,\s*(extended|revised)|\((revised)[^)]*\))\s*:?\s*/i, ''));
  return `${word}: ${text || tidy(firstSentence(w.body))}`;
}

/** Each decision's rule, from every docs/*.md file (a decision's first main paragraph is its rule). */
export function decisionRules(files: Map<string, string>): Map<number, DecisionRule> {
  const rules = new Map<number, DecisionRule>();
  const written = [...files].flatMap(([file, text]) => writtenDecisions(file, text));
  // A bold paragraph is the decision's main text; a heading only where no paragraph names it so.
  for (const headings of [false, true]) {
    for (const w of written) {
      if (w.heading !== headings || kindOf(w) !== 'rule' || rules.has(w.id)) continue;
      rules.set(w.id, { id: w.id, file: w.file, rule: ruleOf(w), amendments: [], revisedBy: [] });
    }
  }
  const revised = (id: number, by: number) => {
    const r = rules.get(id);
    if (r && by !== id && !r.revisedBy.includes(by)) r.revisedBy.push(by);
  };
  for (const w of written) {
    const r = rules.get(w.id);
    if (!r) continue;
    if (kindOf(w) === 'amendment') r.amendments.push(amendmentOf(w));
    for (const by of revisersNamed(`${w.lead} ${w.body}`)) revised(w.id, by);
    for (const id of revisedNamed(`${w.lead} ${leadingParen(w.body).paren}`)) revised(id, w.id);
  }
  for (const r of rules.values()) r.revisedBy.sort((a, b) => a - b);
  return rules;
}

/** docs/*.md: file name → text. */
export async function readDocs(root: string): Promise<Map<string, string>> {
  const dir = path.join(root, 'docs');
  const names = (await fs.readdir(dir)).filter((n) => n.endsWith('.md')).sort();
  return new Map(await Promise.all(names.map(async (n) => [n, await fs.readFile(path.join(dir, n), 'utf8')] as const)));
}

/** The table of decisions.md: id, its rule in one line (with what revised it), and where it is written. */
export function rulesTable(rules: Map<number, DecisionRule>): string {
  const lines = ['| decision | rule | written in |', '|---|---|---|'];
  for (const r of [...rules.values()].sort((a, b) => a.id - b.id)) {
    const revised = r.revisedBy.length > 0 ? ` *Revised by ${r.revisedBy.map((id) => `D-${id}`).join(', ')}.*` : '';
    const amended = r.amendments.map((a) => ` *${a}*`).join('');
    const text = `${r.rule}${amended}${revised}`.replace(/\|/g, '\\|');
    lines.push(`| D-${r.id} | ${text} | [${r.file}](${r.file}) |`);
  }
  return lines.join('\n');
}
