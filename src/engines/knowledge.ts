// Knowledge bases: each `fixtures/knowledge/<name>/*.md` is split into passages and indexed at start-up
// with MiniSearch (BM25-ranked full-text search), so the `knowledge_search` tool (D-21) is real search.
// A passage is returned only when it is relevant to the query (D-111, docs/agent.md).
import fs from 'node:fs/promises';
import path from 'node:path';
import MiniSearch, { type SearchResult } from 'minisearch';
import { DataFileError } from '../core/errors.ts';
import { languageOf } from './intents.ts';
import { STOP_WORDS } from './text.ts';

export interface KnowledgeDocument {
  /** File name, e.g. `rate-limits.md`: how answers name their source. */
  file: string;
  title: string;
  /** French title from the front matter (`title_fr:`), used for generated titles (D-8). */
  title_fr: string;
}

export interface Passage {
  id: number;
  file: string;
  title: string;
  /** Indexed too, so that a French question finds its document by the document's French title. */
  title_fr: string;
  heading: string;
  text: string;
}

export interface SearchHit {
  document: string;
  title: string;
  heading: string;
  passage: string;
  score: number;
}

/** Lower case with accents folded: "crédits" finds "credits", and a French title is found typed without accents. */
const fold = (term: string) =>
  term
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();

function processTerm(term: string): string | null {
  const t = fold(term);
  if (t.length < 2 || STOP_WORDS.has(t)) return null;
  // A light stemmer: plurals and common endings, so "keys" finds "key", "boxes" "box" and "clés" "clé".
  return t.replace(/(?:'s|ies|(?<=[sxz]|ch|sh)es|s)$/, (m) => (m === 'ies' ? 'y' : '')).replace(/(?:ing|ed)$/, '') || t;
}

/**
 * Words that frame a question rather than name its topic ("how do refunds work?", "summarize the refund
 * policy"): a query leaves them out, so that relevance counts the words of its topic only (D-111).
 */
const FRAME_WORDS: ReadonlySet<string> = new Set(
  'work works happen happens mean means handle handled handling summarize summarise describe show find see use used using way ways thing things possible able long exactly'.split(
    ' ',
  ),
);

/** French function and frame words, accents folded, left out of every query ("Où est ma commande ?" is about "commande"). */
const FRENCH_STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'le la les un une des du de au aux et ou que qu qui quoi quel quelle quels quelles pourquoi quand combien ' +
    'je tu il elle nous vous ils elles te se ce cet cette ces mon ma mes ton ta tes sa ses notre nos votre vos leur leurs ' +
    'est sont suis es etes etre ai avons avez ont avoir fait faire fais peux peut pouvez puis dois doit devez veux veut voulez ' +
    'par avec dans sur sous ne pas si mais donc ca cela passe fonctionne marche'
  ).split(' '),
);
/** French words that are English words too: left out of a query only when it is in French. */
const FRENCH_ENGLISH_WORDS: ReadonlySet<string> = new Set(['comment', 'pour', 'plus', 'car', 'son', 'on', 'me', 'as', 'en']);

const TOKENIZE: (text: string) => string[] = MiniSearch.getDefault('tokenize');

/** A query's words as the index knows them, without frame and function words, once each. */
function queryTerms(query: string): string[] {
  const french = languageOf(query) === 'fr';
  const terms = new Set<string>();
  for (const token of TOKENIZE(query)) {
    const raw = fold(token);
    if (FRAME_WORDS.has(raw) || FRENCH_STOP_WORDS.has(raw) || (french && FRENCH_ENGLISH_WORDS.has(raw))) continue;
    // A French infinitive finds its English cognate by prefix: "installer" finds "install".
    const t = processTerm(french && raw.length > 5 ? token.replace(/(?:er|ez)$/i, '') : token);
    if (t) terms.add(t);
  }
  return [...terms];
}

/**
 * D-111: a passage is relevant when it holds more than half of the query's topic words, and a lone
 * word only where it is the passage's subject (its text or its document's title), not where it just
 * labels a section: "Where is my order?" shares nothing but "order" with the heading "Event order".
 */
function relevant(r: SearchResult, topicWords: number): boolean {
  const found = new Set(r.queryTerms).size;
  if (found * 2 <= topicWords) return false;
  return found >= 2 || Object.values(r.match).some((fields) => fields.some((f) => f !== 'heading'));
}

export class KnowledgeBase {
  private readonly index: MiniSearch<Passage>;
  readonly documents: KnowledgeDocument[];

  constructor(
    readonly name: string,
    documents: KnowledgeDocument[],
    passages: Passage[],
  ) {
    this.documents = documents;
    this.index = new MiniSearch<Passage>({
      fields: ['title', 'title_fr', 'heading', 'text'],
      storeFields: ['file', 'title', 'heading', 'text'],
      processTerm,
      // One typo forgiven from five letters on: at four, "game" would find "name" and "shoe" "show".
      searchOptions: {
        boost: { title: 2, title_fr: 2, heading: 1.5 },
        fuzzy: (term) => (term.length > 4 ? 0.15 : false),
        prefix: (term) => term.length > 3,
      },
    });
    this.index.addAll(passages);
  }

  /** The best relevant passages for `query`, best first; empty when none is relevant (D-111). */
  search(query: string, limit = 3): SearchHit[] {
    const terms = queryTerms(query);
    // The terms are already processed: the index's processTerm would stem them twice.
    return this.index
      .search(terms.join(' '), { processTerm: (t) => t })
      .filter((r) => relevant(r, terms.length))
      .slice(0, limit)
      .map((r) => ({
        document: r.file as string,
        title: r.title as string,
        heading: r.heading as string,
        passage: r.text as string,
        score: Math.round(r.score * 1000) / 1000,
      }));
  }

  document(file: string): KnowledgeDocument | undefined {
    return this.documents.find((d) => d.file === file);
  }
}

/** Splits a Markdown document into front matter, title, and one passage per section. */
export function parseDocument(file: string, text: string): { doc: KnowledgeDocument; sections: Array<{ heading: string; text: string }> } {
  let body = text.replace(/\r\n/g, '\n');
  const meta: Record<string, string> = {};
  const fm = /^---\n([\s\S]*?)\n---\n/.exec(body);
  if (fm) {
    for (const line of fm[1]!.split('\n')) {
      const m = /^(\w+):\s*(.*)$/.exec(line);
      if (m) meta[m[1]!] = m[2]!.trim();
    }
    body = body.slice(fm[0].length);
  }
  const h1 = /^# (.+)$/m.exec(body);
  const title = meta.title ?? h1?.[1]?.trim() ?? path.basename(file, '.md');
  const sections: Array<{ heading: string; text: string }> = [];
  let heading = title;
  let lines: string[] = [];
  const flush = () => {
    const t = lines.join('\n').replace(/\s+/g, ' ').trim();
    if (t) sections.push({ heading, text: t });
    lines = [];
  };
  for (const line of body.split('\n')) {
    const h = /^#{1,6} (.+)$/.exec(line);
    if (h) {
      flush();
      heading = h[1]!.trim();
    } else {
      lines.push(line);
    }
  }
  flush();
  return { doc: { file, title, title_fr: meta.title_fr ?? title }, sections };
}

/** Loads and indexes the named knowledge bases from `<fixturesDir>/knowledge/<name>/`. */
export async function loadKnowledgeBases(fixturesDir: string, names: Iterable<string>): Promise<Map<string, KnowledgeBase>> {
  const out = new Map<string, KnowledgeBase>();
  for (const name of new Set(names)) {
    const dir = path.join(fixturesDir, 'knowledge', name);
    let files: string[];
    try {
      files = (await fs.readdir(dir)).filter((f) => f.endsWith('.md')).sort();
    } catch (err) {
      throw new DataFileError(dir, `knowledge base ${JSON.stringify(name)} cannot be read (${(err as NodeJS.ErrnoException).code})`);
    }
    const documents: KnowledgeDocument[] = [];
    const passages: Passage[] = [];
    for (const file of files) {
      const { doc, sections } = parseDocument(file, await fs.readFile(path.join(dir, file), 'utf8'));
      documents.push(doc);
      for (const s of sections)
        passages.push({ id: passages.length, file, title: doc.title, title_fr: doc.title_fr, heading: s.heading, text: s.text });
    }
    out.set(name, new KnowledgeBase(name, documents, passages));
  }
  return out;
}
