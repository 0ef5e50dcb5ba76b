// The import graph of src/: layers point one way, and no file is part of an import circle.
// Static `import … from`, `export … from` and dynamic `import()` all count, type-only ones too
// (a type that crosses a layer upward couples the layers as much as a value does).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import ts from 'typescript';

/**
 * The layer order, top first, as a request flows: the edge (the surfaces, their stages, the transport),
 * then the rules, then what they keep and call. A file may import files of its own layer or of a layer
 * below it, never one above. `core` holds the vocabulary the services speak (errors, answers, callers),
 * so that no service depends on the transport; `contract` is the bottom: the schemas everything speaks.
 */
export const LAYERS: ReadonlyArray<{ name: string; holds: readonly string[] }> = [
  { name: 'main', holds: ['main.ts'] },
  { name: 'app', holds: ['app.ts', 'app-log.ts', 'config.ts', 'heap.ts', 'settings.ts', 'setting-values.ts'] },
  { name: 'api', holds: ['api/'] },
  { name: 'pipeline', holds: ['pipeline/'] },
  { name: 'http', holds: ['http/'] },
  { name: 'services', holds: ['services/'] },
  { name: 'store', holds: ['store/'] },
  { name: 'engines', holds: ['engines/'] },
  { name: 'core', holds: ['core/'] },
  { name: 'contract', holds: ['contract/'] },
];

const ROOT = path.resolve(import.meta.dirname, '..');
const SRC = path.join(ROOT, 'src');

/** The layer index of a file (its path relative to src/, with forward slashes), or -1. */
export function layerOf(rel: string): number {
  return LAYERS.findIndex((l) => l.holds.some((h) => (h.endsWith('/') ? rel.startsWith(h) : rel === h)));
}

/** Relative path → the relative paths of the src/ files it imports. */
export type ImportGraph = Map<string, string[]>;

/** Reads every .ts file under src/ and resolves its relative imports. */
export function readGraph(root = SRC): ImportGraph {
  const graph: ImportGraph = new Map();
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts')) {
        // TypeScript's own pre-parser: import/export … from, `import 'x'`, and `import('x')`.
        const info = ts.preProcessFile(fs.readFileSync(full, 'utf8'), true, true);
        const deps = info.importedFiles
          .map((f) => f.fileName)
          .filter((spec) => spec.startsWith('.'))
          .map((spec) =>
            path
              .relative(root, path.resolve(path.dirname(full), spec))
              .split(path.sep)
              .join('/'),
          );
        graph.set(path.relative(root, full).split(path.sep).join('/'), deps);
      }
    }
  };
  walk(root);
  return graph;
}

/** Every import that points to a layer above its file's (or from or to a file no layer holds). */
export function upwardImports(graph: ImportGraph): string[] {
  const out: string[] = [];
  for (const [file, deps] of graph) {
    const from = layerOf(file);
    if (from === -1) out.push(`${file}: in no layer (add it to LAYERS)`);
    for (const dep of deps) {
      const to = layerOf(dep);
      if (to === -1) out.push(`${file} → ${dep}: the target is in no layer`);
      else if (from !== -1 && to < from) out.push(`${file} (${LAYERS[from]!.name}) → ${dep} (${LAYERS[to]!.name}): imports upward`);
    }
  }
  return out;
}

/** The import circles, each as the files around it (the first repeated at the end). */
export function importCircles(graph: ImportGraph): string[][] {
  const circles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const dep of graph.get(file) ?? []) {
      if (state.get(dep) === 'open') circles.push([...stack.slice(stack.indexOf(dep)), dep]);
      else if (!state.has(dep)) visit(dep);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return circles;
}

/** The backends of the state kept beside conversations: each folder holds its own backend of every concern. */
const BACKENDS = ['src/store/file/', 'src/store/pg/'];
/**
 * Who else may import a backend: the factory that chooses one (store/backend.ts), the data port of
 * `parley data`, which reads and writes either store as it lies on disk or in the database (store/port/),
 * and `parley db`, which migrates a database (cli/commands/db.ts). Everything else sees the interfaces.
 */
const CHOOSE_BACKENDS = ['src/store/backend.ts', 'src/store/port/', 'cli/commands/db.ts'];

/** src/ and cli/ as one graph, keyed by paths relative to the repository. */
export function readProductGraph(root = ROOT): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const dir of ['src', 'cli']) {
    for (const [file, deps] of readGraph(path.join(root, dir))) {
      graph.set(
        `${dir}/${file}`,
        deps.map((d) => path.posix.normalize(`${dir}/${d}`)),
      );
    }
  }
  return graph;
}

/** Every import of a backend's file from outside its folder by a file that is not among CHOOSE_BACKENDS. */
export function backendImports(graph: ImportGraph): string[] {
  const out: string[] = [];
  for (const [file, deps] of graph) {
    for (const dep of deps) {
      const backend = BACKENDS.find((b) => dep.startsWith(b));
      if (!backend || file.startsWith(backend) || CHOOSE_BACKENDS.some((c) => (c.endsWith('/') ? file.startsWith(c) : file === c)))
        continue;
      out.push(`${file} → ${dep}: only src/store/backend.ts chooses a backend`);
    }
  }
  return out;
}

describe('the import graph of src/', () => {
  const graph = readGraph();

  test('is read whole: every file, its static and dynamic imports', () => {
    assert.ok(graph.size >= 40, `only ${graph.size} files found under src/`);
    assert.ok(graph.get('main.ts')!.includes('app.ts'));
    assert.ok(graph.get('http/surface.ts')!.includes('http/router.ts'));
  });

  test(`layers point one way: ${LAYERS.map((l) => l.name).join(' → ')}`, () => {
    assert.deepEqual(upwardImports(graph), []);
  });

  test(`only src/store/backend.ts chooses a backend: nothing else in src/ or cli/ imports ${BACKENDS.join(' or ')}`, () => {
    const product = readProductGraph();
    assert.ok(product.get('src/store/backend.ts')!.includes('src/store/pg/pg-store.ts'), 'the graph sees the factory import a backend');
    assert.deepEqual(backendImports(product), []);
  });

  test('no import circle', () => {
    assert.deepEqual(
      importCircles(graph).map((c) => c.join(' → ')),
      [],
    );
  });

  test('the checks catch what they are for (a made-up graph)', () => {
    const made: ImportGraph = new Map([
      ['core/a.ts', ['http/b.ts']],
      ['http/b.ts', ['core/a.ts']],
      ['api/c.ts', ['services/d.ts', 'contract/index.ts']],
      ['services/d.ts', []],
      ['contract/index.ts', []],
      ['stray.ts', []],
    ]);
    assert.deepEqual(upwardImports(made), [
      'core/a.ts (core) → http/b.ts (http): imports upward',
      'stray.ts: in no layer (add it to LAYERS)',
    ]);
    assert.deepEqual(importCircles(made), [['core/a.ts', 'http/b.ts', 'core/a.ts']]);
    // Backends: their own folder, the factory and the port may import them; a stage, the other backend or the CLI's data command may not.
    const stores: ImportGraph = new Map([
      ['src/store/file/file-store.ts', ['src/store/file/journal.ts', 'src/store/types.ts']],
      ['src/store/backend.ts', ['src/store/file/file-store.ts', 'src/store/pg/pg-store.ts']],
      ['src/store/port/file-port.ts', ['src/store/file/file-store.ts']],
      ['cli/commands/db.ts', ['src/store/pg/migrate.ts']],
      ['src/pipeline/rate-limit.ts', ['src/store/file/journal.ts', 'src/store/shared.ts']],
      ['src/store/pg/pg-store.ts', ['src/store/file/response-log.ts']],
      ['cli/commands/data.ts', ['src/store/file/dir-lock.ts']],
    ]);
    assert.deepEqual(backendImports(stores), [
      'src/pipeline/rate-limit.ts → src/store/file/journal.ts: only src/store/backend.ts chooses a backend',
      'src/store/pg/pg-store.ts → src/store/file/response-log.ts: only src/store/backend.ts chooses a backend',
      'cli/commands/data.ts → src/store/file/dir-lock.ts: only src/store/backend.ts chooses a backend',
    ]);
    // A dynamic import counts like a static one.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-layers-'));
    try {
      fs.mkdirSync(path.join(dir, 'store'));
      fs.writeFileSync(path.join(dir, 'store/x.ts'), "export async function f() { return import('../api/y.ts'); }\n");
      fs.mkdirSync(path.join(dir, 'api'));
      fs.writeFileSync(path.join(dir, 'api/y.ts'), "import type { T } from '../store/x.ts';\nexport {};\n");
      const g = readGraph(dir);
      assert.deepEqual(g.get('store/x.ts'), ['api/y.ts']);
      assert.deepEqual(upwardImports(g), ['store/x.ts (store) → api/y.ts (api): imports upward']);
      assert.equal(importCircles(g).length, 1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
