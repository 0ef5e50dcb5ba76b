// Browser tests' helpers: Debian's Chromium driven by playwright-core (never a downloaded browser),
// a host page server on another origin, and fixtures whose widgets allow that origin.
import fsp from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { FIXTURES_DIR, tempDir } from './helpers.ts';
import { needSystemTool } from './system.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

/** Without Chromium the tests fail with the reason, unless PARLEY_TEST_SKIP_MISSING=1 (test/support/system.ts). */
export function chromiumMissing(): string | false {
  return needSystemTool(CHROMIUM, ['--version'], 'chromium');
}

/** A browser profile of its own: one visitor (its own localStorage), in a fresh user data directory. */
export async function launch(viewport = { width: 1280, height: 800 }): Promise<BrowserContext> {
  const userDataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'parley-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport,
  });
  context.once('close', () => void fsp.rm(userDataDir, { recursive: true, force: true }).catch(() => {}));
  return context;
}

export interface HostServer {
  origin: string;
  close(): Promise<void>;
}

/**
 * A host page on its own origin, with the strict CSP a careful site sends (no inline script or style),
 * embedding the widget with the one documented tag: `/?app=<id>` (its `parley` base set later).
 */
/** A host's own stylesheet at its worst: broad selectors and !important, which must not reach the widget. */
export const HOSTILE_CSS = `* { color: rgb(0, 255, 0) !important; font-size: 40px !important; font-family: serif !important; }
button { background: rgb(255, 0, 0) !important; border: 5px dashed blue !important; }
.panel, .launcher, .msg, form, label { display: none !important; }`;

export async function startHost(page: (url: URL) => string, csp: (origin: string) => string): Promise<HostServer & { parley: string }> {
  const host = { parley: '' } as HostServer & { parley: string };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/favicon.ico') return void res.writeHead(404).end();
    if (url.pathname === '/host.css') return void res.writeHead(200, { 'content-type': 'text/css' }).end(HOSTILE_CSS);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': csp(host.parley) });
    res.end(page(url));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  host.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  host.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return host;
}

/** The fixtures, copied to a directory of their own, with `edit` applied to fixtures.json. */
export async function editedFixtures(edit: (f: any) => void | Promise<void>): Promise<string> {
  const dir = await tempDir('parley-fixtures-');
  await fsp.cp(FIXTURES_DIR, dir, { recursive: true });
  const file = path.join(dir, 'fixtures.json');
  const f = JSON.parse(await fsp.readFile(file, 'utf8'));
  await edit(f);
  await fsp.writeFile(file, JSON.stringify(f, null, 2));
  return dir;
}

/** The fixtures, copied, with `origin` added to every widget's origins and `edit` applied. */
export function fixturesAllowing(origin: string, edit: (f: any) => void = () => {}): Promise<string> {
  return editedFixtures((f) => {
    for (const app of f.apps) if (app.widget) app.widget.origins.push(origin);
    edit(f);
  });
}
