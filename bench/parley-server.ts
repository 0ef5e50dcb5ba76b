// Parley for the benchmark: `node --import tsx bench/parley-server.ts <dataDir> <fixturesDir>`.
// Reports how long start-up took (process start → listening) and its memory on request.
import { serveIpc } from './child.ts';

const [dataDir, fixturesDir] = process.argv.slice(2);
// As `npm start` does (src/main.ts).
(await import('../src/heap.ts')).limitHeapGrowth();
// performance.now() counts from the start of this process, so this includes Node and tsx loading.
const importStart = performance.now();
const { startParley } = await import('../src/app.ts');
const { loadConfig } = await import('../src/config.ts');
const openStart = performance.now();
// Configured like `npm start` (so PARLEY_MODEL, OLLAMA_HOST and LOG_LEVEL apply), on loopback port 0.
const config = loadConfig(['--data-dir', dataDir!, '--fixtures', fixturesDir!, '--host', '127.0.0.1', '--port', '0'], process.env);
const parley = await startParley(config);
const readyAt = performance.now();
serveIpc(() => parley.close());
process.send!({
  type: 'ready',
  port: parley.port,
  processToReadyMs: readyAt,
  bootMs: importStart,
  importMs: openStart - importStart,
  openMs: readyAt - openStart,
  rss: process.memoryUsage().rss,
});
