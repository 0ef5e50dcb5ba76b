// The dashboard's browser tests' shared steps (test/proof/dashboard-*.test.ts): sign in, where focus is,
// a Tab round a page (D-99) and axe-core's findings.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { DEMO_ADMIN } from './admin-token.ts';

const AXE = await fs.readFile(path.resolve(import.meta.dirname, '../../node_modules/axe-core/axe.min.js'), 'utf8');

export async function signIn(page: Page, password = DEMO_ADMIN.password, email = DEMO_ADMIN.email): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** D-99: the focused element, named for a message. */
export const focused = (page: Page) =>
  page.evaluate(() => {
    const el = document.activeElement;
    return { id: el?.id ?? '', tag: el?.tagName ?? '', text: (el?.textContent ?? '').trim() };
  });

/**
 * D-99: Tab from where focus is, round the page: every control that takes focus is reached, and each shows
 * its focus (an outline of 2 px or more). Controls are marked first, then Tab is pressed
 * until all are reached (at most twice their number, so a trap or a skipped control fails).
 */
export async function tabThrough(page: Page): Promise<{ missed: string[]; unseen: string[]; stops: number }> {
  const controls = await page.evaluate(() => {
    const all = [...document.querySelectorAll<HTMLElement>('a[href], button, input, select, textarea, summary, [tabindex]')].filter(
      (el) =>
        el.tabIndex >= 0 &&
        !(el as HTMLButtonElement).disabled &&
        el.getClientRects().length > 0 &&
        getComputedStyle(el).visibility !== 'hidden',
    );
    return all.map((el, i) => {
      el.dataset.tab = String(i);
      return `${el.tagName.toLowerCase()}#${el.id} “${(el.getAttribute('aria-label') ?? el.textContent ?? '').trim().slice(0, 40)}”`;
    });
  });
  const reached = new Set<number>();
  const unseen: string[] = [];
  for (let i = 0; i < controls.length * 2 + 4 && reached.size < controls.length; i++) {
    await page.keyboard.press('Tab');
    const at = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      if (!el || el === document.body || el.dataset.tab === undefined) return null;
      const cs = getComputedStyle(el);
      return { n: Number(el.dataset.tab), ring: cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 2 };
    });
    if (!at) continue;
    reached.add(at.n);
    if (!at.ring) unseen.push(controls[at.n]!);
  }
  return { missed: controls.filter((_, i) => !reached.has(i)), unseen: [...new Set(unseen)], stops: controls.length };
}

/** axe-core's serious and critical violations (WCAG 2.1 A and AA). */
export async function axe(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(AXE);
  return page.evaluate(async () => {
    type Result = { id: string; impact: string; nodes: Array<{ target: unknown }> };
    const axe = (window as unknown as { axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: Result[] }> } }).axe;
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.impact} ${v.id}: ${JSON.stringify(v.nodes.map((n) => n.target))}`);
  });
}
