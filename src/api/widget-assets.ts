// The widget's script and the playground (docs/widget.md, D-55, D-58): TypeScript under widget/,
// bundled by esbuild in memory on first request and kept for the life of the process. Nothing is
// fetched at run time, and no build step can be forgotten or go stale: `npm start` runs from sources.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { AppT, Tenants } from '../core/tenants.ts';
import { Asset, NoContent } from '../http/reply.ts';

const WIDGET_DIR = path.resolve(import.meta.dirname, '../../widget');

/** Bundles one entry of widget/ into a single minified script (an IIFE: a classic script tag runs it). */
export function bundle(entry: string): Promise<string> {
  return bundleScript(path.join(WIDGET_DIR, entry));
}

/** Bundles a browser entry (the widget's, the dashboard's) into one minified IIFE for the browsers the pages support. */
export async function bundleScript(file: string): Promise<string> {
  const esbuild = await import('esbuild');
  const out = await esbuild.build({
    entryPoints: [file],
    bundle: true,
    minify: true,
    format: 'iife',
    target: ['chrome100', 'firefox100', 'safari15'],
    write: false,
    logLevel: 'silent',
    legalComments: 'none',
  });
  return out.outputFiles[0]!.text;
}

/** An asset made on its first request and kept; a failed build is tried again on the next request. */
export function builtOnce(make: () => Promise<Asset>): () => Promise<Asset> {
  let made: Promise<Asset> | undefined;
  return () =>
    (made ??= make().catch((err) => {
      made = undefined;
      throw err;
    }));
}

/** D-58: the playground's page may run nothing but its own files: a strict CSP, like a careful host's. */
const PLAYGROUND_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const SCRIPT = 'text/javascript; charset=utf-8';

/** Pages by path, each built once on first request. */
export function widgetPages(opts: { tenants: Tenants; playground: boolean }): Map<string, () => Promise<Asset | NoContent>> {
  const pages = new Map<string, () => Promise<Asset | NoContent>>([
    // Any page may load the script (CORP cross-origin); no-cache: a browser revalidates, so a new server's widget is picked up.
    [
      '/widget.js',
      builtOnce(
        async () =>
          new Asset(SCRIPT, await bundle('widget.ts'), { 'cache-control': 'no-cache', 'cross-origin-resource-policy': 'cross-origin' }),
      ),
    ],
    // A browser asks every server it visits for an icon: no icon, and no 404 in its console; asked once a day.
    ['/favicon.ico', async () => new NoContent({ 'cache-control': 'max-age=86400' })],
  ]);
  if (opts.playground) {
    const headers = { 'cache-control': 'no-cache', 'content-security-policy': PLAYGROUND_CSP };
    pages.set(
      '/',
      builtOnce(async () => new Asset('text/html; charset=utf-8', await playgroundHtml(opts.tenants), headers)),
    );
    pages.set(
      '/playground.js',
      builtOnce(async () => new Asset(SCRIPT, await bundle('playground.ts'), headers)),
    );
    pages.set(
      '/playground.css',
      builtOnce(async () => new Asset('text/css; charset=utf-8', await fs.readFile(path.join(WIDGET_DIR, 'playground.css')), headers)),
    );
  }
  return pages;
}

/** D-47: the apps a publishable key reaches through the widget: a widget, active, and a publishable key of its team. */
function widgetApps(tenants: Tenants): AppT[] {
  const teams = new Set(tenants.keys.filter((k) => k.type === 'publishable').map((k) => k.team_id));
  return [...tenants.apps.values()].filter((a) => a.widget && a.active && teams.has(a.team_id));
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page; the publishable key is prefilled from the fixtures' target file when it has one (it is public by design). */
async function playgroundHtml(tenants: Tenants): Promise<string> {
  let key = '';
  try {
    const target = JSON.parse(await fs.readFile(path.join(tenants.dir, 'target.json'), 'utf8')) as { publishable_key?: unknown };
    if (typeof target.publishable_key === 'string') key = target.publishable_key;
  } catch {
    // Custom fixtures without a target file: the developer pastes their key.
  }
  const template = await fs.readFile(path.join(WIDGET_DIR, 'playground.html'), 'utf8');
  const options = widgetApps(tenants)
    .map((a) => `<option value="${escapeHtml(a.id)}">${escapeHtml(a.name)} (${escapeHtml(a.id)})</option>`)
    .join('\n          ');
  return template.replace('{{options}}', options).replace('{{key}}', escapeHtml(key));
}
