// Knowledge bases: each `fixtures/knowledge/<name>/*.md` is split into passages and indexed at start-up
// with MiniSearch (BM25-ranked full-text search), so the `knowledge_search` tool (D-21) is real search.
import fs from 'node:fs/promises';
import path from 'node:path';
import MiniSearch from 'minisearch';
import { DataFileError } from '../core/errors.ts';
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

function processTerm(term: string): string | null {
  const t = term.toLowerCase();
  if (t.length < 2 || STOP_WORDS.has(t)) return null;
  // A light stemmer: plurals and common endings, so "keys" finds "key" and "limits" finds "limit".
  return t.replace(/(?:'s|ies|es|s)$/, (m) => (m === 'ies' ? 'y' : '')).replace(/(?:ing|ed)$/, '') || t;
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
      fields: ['title', 'heading', 'text'],
      storeFields: ['file', 'title', 'heading', 'text'],
      processTerm,
      searchOptions: { boost: { title: 2, heading: 1.5 }, fuzzy: 0.15, prefix: (term) => term.length > 3 },
    });
    this.index.addAll(passages);
  }

  /** The best passages for `query`, best first; empty when nothing matches. */
  search(query: string, limit = 3): SearchHit[] {
    return this.index
      .search(query)
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
      for (const s of sections) passages.push({ id: passages.length, file, title: doc.title, heading: s.heading, text: s.text });
    }
    out.set(name, new KnowledgeBase(name, documents, passages));
  }
  return out;
}
