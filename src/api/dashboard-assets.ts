// The dashboard (docs/dashboard.md, D-95…D-99): TypeScript under dashboard/, bundled by esbuild in memory
// on first request and kept for the life of the process, as the widget is (src/api/widget-assets.ts).
// Its only back end is the admin surface, /admin/v1, on the same origin (the session cookie is SameSite=Strict).
import fs from 'node:fs/promises';
import path from 'node:path';
import { Asset } from '../http/reply.ts';
import { builtOnce, bundleScript } from './widget-assets.ts';

export const DASHBOARD_DIR = path.resolve(import.meta.dirname, '../../dashboard');
export const DASHBOARD_PATH = '/dashboard';

/**
 * D-96: the page runs nothing but its own two files: no inline script or style, no other origin, no
 * frame may hold it (clickjacking), and no form posts anywhere (every write is a fetch with the CSRF token).
 */
export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HEADERS = {
  'cache-control': 'no-cache',
  'content-security-policy': DASHBOARD_CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/** D-95: the dashboard's script, one minified IIFE (the size test holds it under DASHBOARD_MAX_BYTES). */
export function bundleDashboard(): Promise<string> {
  return bundleScript(path.join(DASHBOARD_DIR, 'main.ts'));
}

/** The dashboard's pages by path, each built once on first request (none with --no-dashboard). */
export function dashboardPages(enabled: boolean): Map<string, () => Promise<Asset>> {
  if (!enabled) return new Map();
  const file = (name: string, type: string) =>
    builtOnce(async () => new Asset(type, await fs.readFile(path.join(DASHBOARD_DIR, name)), HEADERS));
  return new Map([
    [DASHBOARD_PATH, file('index.html', 'text/html; charset=utf-8')],
    [`${DASHBOARD_PATH}/`, file('index.html', 'text/html; charset=utf-8')],
    [`${DASHBOARD_PATH}/app.js`, builtOnce(async () => new Asset('text/javascript; charset=utf-8', await bundleDashboard(), HEADERS))],
    [`${DASHBOARD_PATH}/app.css`, file('dashboard.css', 'text/css; charset=utf-8')],
  ]);
}
