// Bundles each everyday test file (test/*.test.ts) with the repository's modules it imports into a few ES
// modules under .test-build/, so that `npm test` loads plain JavaScript instead of going through tsx's
// loader for each of some 200 source files: that loading was a third of the tier's CPU time
// (docs/benchmarks.md, "The test tiers"). The compiler is tsx's own (esbuild). Each module's import.meta
// is its source file's, so that paths computed from it (the repository's root, the fixtures, the widget's
// sources) are the ones the test sees under tsx.
// The packages the server loads at every start are bundled too (BUNDLED): some 350 files of theirs,
// resolved, read and compiled one by one in every test process, were a tenth of each server-backed file's
// CPU time. The others stay external, resolved from node_modules as usual: those that find files beside
// their own (pino's worker threads), the optional driver (patched in place), and the tools only a few
// tests load. Bundled CommonJS (undici, commander) calls require() for node's builtins, which each module
// gets from createRequire (the banner).
// Coverage is measured on the sources themselves (npm run test:coverage): a bundle's source map does
// not map every range back exactly. The maps are written but not applied by default: with
// --enable-source-maps each process reads every chunk's map as it loads the chunk and decodes it at the
// first error stack formatted there (a stream destroyed with an error formats one): about 8 % of the
// tier's CPU time. `NODE_OPTIONS=--enable-source-maps npm test` points stack traces at the .ts lines.
import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = path.resolve(import.meta.dirname, '..');
const OUT = path.join(ROOT, '.test-build');

const ownImportMeta = {
  name: 'own-import-meta',
  setup(build) {
    build.onLoad({ filter: /\.[cm]?ts$/ }, async (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const source = await fs.readFile(args.path, 'utf8');
      const contents = source
        .replaceAll('import.meta.dirname', JSON.stringify(path.dirname(args.path)))
        .replaceAll('import.meta.filename', JSON.stringify(args.path))
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href));
      return { contents, loader: 'ts' };
    });
  },
};

const BUNDLED = new Set([
  'commander',
  'eventsource-parser',
  'fast-json-patch',
  'lowdb',
  'minisearch',
  'ollama',
  'openai',
  'standardwebhooks',
  'undici',
  'zod',
]);

/** A package import of the repository's own code stays external unless BUNDLED names it; a package's own imports are bundled with it. */
const externalPackages = {
  name: 'external-packages',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.importer.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const name = args.path
        .split('/')
        .slice(0, args.path.startsWith('@') ? 2 : 1)
        .join('/');
      return BUNDLED.has(name) ? undefined : { path: args.path, external: true };
    });
  },
};

const dir = path.join(ROOT, 'test');
const entries = (await fs.readdir(dir)).filter((f) => f.endsWith('.test.ts')).map((f) => path.join(dir, f));
await fs.rm(OUT, { recursive: true, force: true });
await esbuild.build({
  entryPoints: entries,
  outdir: OUT,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  sourcemap: 'linked',
  sourcesContent: false,
  logLevel: 'warning',
  plugins: [externalPackages, ownImportMeta],
});
