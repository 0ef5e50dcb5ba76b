// Broken copies of the client kit's reference client (conformance/client/reference-client.ts), each
// with one behaviour removed or wrong, and the case that must fail for it: the kit's self-proof, as
// the server suite's mutants are its own.
import fs from 'node:fs/promises';
import path from 'node:path';

export const REFERENCE_CLIENT = path.resolve(import.meta.dirname, '../../conformance/client/reference-client.ts');

export interface ClientMutant {
  name: string;
  /** The case (or `<case>/should`) that must fail for it, and a word of its failure message. */
  fails: string;
  because: RegExp;
  /** Text of the reference client and what replaces it; each must be found. */
  edits: Array<[string, string]>;
}

export const CLIENT_MUTANTS: ClientMutant[] = [
  {
    name: 'resumes from the start',
    fails: 'K-stream-drop/should',
    because: /resumes from sequence_number 2/,
    edits: [
      ["headers: r.lastSeq >= 0 ? { 'last-event-id': String(r.lastSeq) } : {},", 'headers: {},'],
      ['if (seq <= r.lastSeq) return;', 'if (seq <= r.lastSeq && r.lastSeq < 0) return;'],
    ],
  },
  { name: 'never resumes', fails: 'K-stream-drop', because: /text shown/, edits: [['if (r.status) return r;', 'return r;']] },
  {
    name: 'retries at once after a 429',
    fails: 'K-create-429/should',
    because: /after a Retry-After of 2 s/,
    edits: [['return Number.isFinite(after) && after >= 0 ? after * 1000 : 500 * 2 ** attempt;', 'return 0 * after * attempt;']],
  },
  {
    name: 'a new Idempotency-Key on each retry',
    fails: 'K-create-500/should',
    because: /one operation, one key/,
    edits: [["'idempotency-key': c.idempotencyKey", "'idempotency-key': attempt === 0 ? c.idempotencyKey : randomUUID()"]],
  },
  {
    name: 'retries without end',
    fails: 'K-create-503/should',
    because: /at most 5 tries/,
    edits: [
      ['const TRIES = 5;', 'const TRIES = 50;'],
      ['return Number.isFinite(after) && after >= 0 ? after * 1000 : 500 * 2 ** attempt;', 'return 100 + 0 * after * attempt;'],
    ],
  },
  {
    name: 'takes a malformed frame for the end',
    fails: 'K-stream-malformed',
    because: /text shown/,
    edits: [
      ['return; // A frame that is not JSON is not the end of the reply.', "r.status = 'completed';\n        return;"],
      ['    onEvent(m) {\n', '    onEvent(m) {\n      if (r.status) return;\n'],
    ],
  },
  {
    // Shows the deltas as they come, as many clients do, without reading the assembled text of `.done`.
    name: 'shows a duplicate event twice',
    fails: 'K-stream-duplicate',
    because: /text shown/,
    edits: [
      ['if (seq <= r.lastSeq) return;', ''],
      [
        "  } else if (type === 'response.output_text.done')\n    r.items[i] = { type: 'message', role: 'assistant', content: [{ type: 'text', text: d.text }] };\n  else if",
        '  } else if',
      ],
    ],
  },
  {
    name: 'drops the last page',
    fails: 'K-list-desc',
    because: /the walk yields/,
    edits: [['ids.push(...page.data.map((c) => c.id));', 'if (page.has_more) ids.push(...page.data.map((c) => c.id));']],
  },
  {
    name: 'shows a failed reply as done',
    fails: 'K-stream-failed',
    because: /expected failed/,
    edits: [["r.status = 'failed';", "r.status = 'completed';"]],
  },
  {
    name: "applies a form's patches in the wrong order",
    fails: 'K-stream-form',
    because: /items/,
    edits: [['r.patches.push(d.data.patch);', 'r.patches.unshift(d.data.patch);']],
  },
  {
    name: 'cancels by closing the socket',
    fails: 'K-cancel',
    because: /cancelled reply is reported failed/,
    edits: [
      [
        "cancelling = call({ method: 'POST', path: `/apps/${APP}/responses/${encodeURIComponent(sofar.responseId)}/cancel` });",
        "cancelling = Promise.resolve(new Response());\n          sofar.status = 'completed';",
      ],
    ],
  },
];

/** Writes the broken copy into `dir` (its imports resolved through a link to the project's node_modules) and returns its path. */
export async function writeMutant(m: ClientMutant, dir: string): Promise<string> {
  await fs
    .symlink(path.resolve(import.meta.dirname, '../../node_modules'), path.join(dir, 'node_modules'))
    .catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  // An ES module, as the reference is in the project (its top-level await needs one).
  await fs.writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  let text = await fs.readFile(REFERENCE_CLIENT, 'utf8');
  for (const [from, to] of m.edits) {
    if (!text.includes(from)) throw new Error(`mutant "${m.name}": the reference client no longer has ${JSON.stringify(from)}`);
    text = text.replace(from, to);
  }
  const file = path.join(dir, `broken-${m.name.replace(/\W+/g, '-')}.ts`);
  await fs.writeFile(file, text);
  return file;
}
