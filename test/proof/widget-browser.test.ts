// The widget in a real browser (docs/widget.md): Debian's Chromium, headless, driven by playwright-core.
// A host page on its own origin embeds the widget with the one documented tag, under a strict CSP.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { KEY, startTestServer, type TestServer } from '../support/helpers.ts';
import { PK, originOf } from '../support/widget.ts';
import { chromiumMissing, fixturesAllowing, launch, startHost, type HostServer } from '../support/browser.ts';

const skip = chromiumMissing();
const ROOT = path.resolve(import.meta.dirname, '../..');
/** Test artifacts (gitignored); docs/images/ keeps one of each for the README. */
const ARTIFACTS = path.join(ROOT, 'test-artifacts');
const AXE = await fs.readFile(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');

/** An app's form whose title is HTML: the agent says it back, and it must show as text. */
const HTML_TITLE = '<img src=x onerror="window.__pwned=1"><b>Bold</b> offer';

/** D-94: form fields named after the form's own members (DOM clobbering) and Object.prototype's. */
const CLOBBER_NAMES = [
  'reportValidity',
  'elements',
  'submit',
  'action',
  'append',
  'addEventListener',
  'isConnected',
  'replaceWith',
  'querySelectorAll',
  'length',
  'id',
  '__proto__',
];

let parley: TestServer;
let host: HostServer & { parley: string };
let evil: HostServer & { parley: string };
const contexts: BrowserContext[] = [];

const hostPage = (url: URL) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>A shop</title><link rel="stylesheet" href="/host.css"></head>
<body><main><h1>A shop</h1><p>Host page content.</p></main>
<script src="${host.parley}/widget.js" data-app-id="${url.searchParams.get('app')}" data-publishable-key="${PK}" async></script>
</body></html>`;
// No 'unsafe-inline' anywhere: the widget must style itself with constructable stylesheets.
const strictCsp = (parleyOrigin: string) =>
  `default-src 'none'; script-src ${parleyOrigin}; connect-src ${parleyOrigin}; style-src 'self'; img-src 'self'`;

before(async () => {
  if (skip) return;
  host = await startHost((u) => hostPage(u), strictCsp);
  evil = await startHost((u) => hostPage(u).replace('A shop', 'Not allowed'), strictCsp);
  const fixturesDir = await fixturesAllowing(host.origin, (f) => {
    f.apps.find((a: any) => a.id === 'app_genui').agent.forms.push('html', 'clobber');
    f.apps.find((a: any) => a.id === 'app_slow').widget = { origins: [host.origin] };
  });
  await fs.writeFile(
    path.join(fixturesDir, 'forms/html.json'),
    JSON.stringify({
      title: HTML_TITLE,
      title_fr: 'HTML',
      description: '<i>not italic</i>',
      submit_label: '<u>Go</u>',
      keywords: ['markup'],
      fields: [{ name: 'x', label: '<em>label</em>', type: 'text', required: false }],
    }),
  );
  // D-94: fields named after properties and methods of a form, and after what an object inherits.
  await fs.writeFile(
    path.join(fixturesDir, 'forms/clobber.json'),
    JSON.stringify({
      title: 'Clobber',
      title_fr: 'Clobber',
      description: '',
      submit_label: 'Submit',
      keywords: ['clobber'],
      fields: CLOBBER_NAMES.map((name) => ({ name, label: `Field ${name}`, type: 'text', required: name === 'reportValidity' })),
    }),
  );
  parley = await startTestServer({ fixturesDir });
  host.parley = evil.parley = originOf(parley);
  await fs.mkdir(ARTIFACTS, { recursive: true });
});

after(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await parley?.close();
  await host?.close();
  await evil?.close();
});

async function visitorContext(viewport?: { width: number; height: number }): Promise<BrowserContext> {
  const c = await launch(viewport);
  contexts.push(c);
  return c;
}

/** A page of `origin` embedding `app`'s widget; CSP violations and page errors are collected. */
async function open(context: BrowserContext, app: string, origin = host.origin): Promise<Page & { violations: string[] }> {
  const page = Object.assign(await context.newPage(), { violations: [] as string[] });
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) page.violations.push(m.text());
  });
  page.on('pageerror', (e) => page.violations.push(`pageerror: ${e.message}`));
  await page.goto(`${origin}/?app=${app}`);
  return page;
}

const launcher = (page: Page) => page.locator('.parley-widget-host').locator('button.launcher');
const panel = (page: Page) => page.locator('.parley-widget-host').locator('.panel');
const agentTexts = (page: Page) => page.locator('.parley-widget-host').locator('.msg.agent .text');

async function openPanel(page: Page, agentName: string): Promise<void> {
  await launcher(page).filter({ hasText: agentName }).click();
  await panel(page).waitFor({ state: 'visible' });
}

/** The reply has ended: the composer shows Send again. */
async function idle(page: Page): Promise<void> {
  await page.waitForFunction(
    () =>
      document.querySelector('.parley-widget-host')?.shadowRoot?.querySelector('.composer button.primary:not([hidden])')?.textContent ===
      'Send',
  );
}

async function say(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message', { exact: true }).fill(text);
  await page.getByLabel('Message', { exact: true }).press('Enter');
}

/** The focused element inside the widget (tag and text or placeholder), or what has the focus outside it. */
async function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    const host = document.querySelector('parley-widget');
    const e = document.activeElement === host ? host?.shadowRoot?.activeElement : document.activeElement;
    if (!e) return 'nothing';
    return `${e.tagName} ${(e as HTMLTextAreaElement).placeholder || e.textContent}`;
  });
}

/** The accessible names of the panel's buttons, in order, as the browser's accessibility tree has them. */
async function buttonNames(page: Page): Promise<string[]> {
  return [...(await panel(page).ariaSnapshot()).matchAll(/- button "([^"]*)"/g)].map((m) => m[1]!);
}

interface SubmitSeen {
  events: string[];
  disabled: boolean[];
}

/**
 * D-59: from now on, each stream event the widget dispatches, and at each one once a form shows, whether
 * the panel's first form's submit button is disabled; `submitSeen` reads them once the reply has ended.
 */
async function watchSubmit(page: Page): Promise<void> {
  await page.evaluate(() => {
    const seen: SubmitSeen = { events: [], disabled: [] };
    (window as unknown as { __submitSeen: SubmitSeen }).__submitSeen = seen;
    document.addEventListener('parley:event', (e) => {
      seen.events.push((e as CustomEvent<{ event: string }>).detail.event);
      const root = document.querySelector('.parley-widget-host')?.shadowRoot;
      const button = root?.querySelector<HTMLButtonElement>('form.gen-form button[type="submit"]');
      if (button) seen.disabled.push(button.disabled);
    });
  });
}

async function submitSeen(page: Page): Promise<boolean[]> {
  await page.waitForFunction(() =>
    (window as unknown as { __submitSeen: SubmitSeen }).__submitSeen.events.some(
      (e) => e === 'response.completed' || e === 'response.failed',
    ),
  );
  await idle(page);
  return page.evaluate(() => (window as unknown as { __submitSeen: SubmitSeen }).__submitSeen.disabled);
}

/** The stored conversation id of `app` in this browser (localStorage of the page's origin). */
async function storedConversation(page: Page, app: string): Promise<string> {
  return page.evaluate(
    ([base, a]) => JSON.parse(localStorage.getItem(`parley-widget:${base}:${a}`) ?? '{}').conversationId,
    [host.parley, app],
  );
}

describe('the widget in Chromium', { skip }, () => {
  test('a message streams into the panel, themed from the app config, under a strict CSP', async () => {
    const page = await open(await visitorContext(), 'app_demo');
    await openPanel(page, 'Parley Assistant');
    // What the panel showed at each text delta: it must grow while the reply streams.
    await page.evaluate(() => {
      const w = window as unknown as { seen: string[] };
      w.seen = [];
      document.addEventListener('parley:event', (e) => {
        if ((e as CustomEvent).detail.event !== 'response.output_text.delta') return;
        const texts = document.querySelector('.parley-widget-host')!.shadowRoot!.querySelectorAll('.msg.agent .text');
        queueMicrotask(() => w.seen.push(texts[texts.length - 1]?.textContent ?? ''));
      });
    });
    await say(page, 'How do I rotate an API key?');
    await page.locator('.parley-widget-host').locator('.msg.agent').last().waitFor();
    await idle(page);
    const final = (await agentTexts(page).last().textContent())!;
    const seen = await page.evaluate(() => (window as unknown as { seen: string[] }).seen);
    assert.ok(seen.length >= 3, `deltas seen: ${seen.length}`);
    for (let i = 1; i < seen.length; i++)
      assert.ok(seen[i]!.length > seen[i - 1]!.length && seen[i]!.startsWith(seen[i - 1]!), 'the text grows delta by delta');
    assert.equal(seen.at(-1), final);
    await page.getByText('Searched the knowledge base').waitFor();
    // The theme: app_demo's primary color on the launcher, its agent name in the header.
    assert.equal(await launcher(page).evaluate((b) => getComputedStyle(b).backgroundColor), 'rgb(31, 111, 235)');
    assert.equal(await panel(page).locator('h2').textContent(), 'Parley Assistant');
    // The host's stylesheet (HOSTILE_CSS: broad selectors, !important) does not reach inside…
    assert.equal(
      await page.evaluate(() => getComputedStyle(document.querySelector('h1')!).color),
      'rgb(0, 255, 0)',
      'the host stylesheet applies to the host page',
    );
    const inside = await agentTexts(page)
      .last()
      .evaluate((e) => {
        const s = getComputedStyle(e);
        return [s.color, s.fontSize, getComputedStyle(e.closest('.panel')!).display];
      });
    assert.deepEqual(inside, ['rgb(31, 35, 40)', '15px', 'flex']);
    assert.equal(await launcher(page).evaluate((b) => getComputedStyle(b).borderStyle), 'none');
    // …and the widget's styles do not leak out.
    assert.equal(await page.evaluate(() => document.styleSheets.length), 1);
    assert.deepEqual(page.violations, []);
    await panel(page).screenshot({ path: path.join(ARTIFACTS, 'widget-panel.png') });
  });

  test('the generative-UI app builds a form that is filled, submitted, and kept in the history (REST)', async () => {
    const page = await open(await visitorContext(), 'app_genui');
    await openPanel(page, 'Form Builder');
    assert.equal(await launcher(page).evaluate((b) => getComputedStyle(b).backgroundColor), 'rgb(130, 80, 223)');
    await watchSubmit(page);
    await say(page, 'I would like someone to contact me');
    const form = page.locator('.parley-widget-host').locator('form.gen-form');
    await form.getByRole('button', { name: 'Send' }).waitFor();
    // Fields by type, with labels and required marks.
    assert.equal(await form.getByLabel('Email').getAttribute('type'), 'email');
    assert.equal(await form.getByLabel('Phone').getAttribute('type'), 'tel');
    assert.equal(await form.getByLabel('How can we help?').evaluate((e) => e.tagName), 'TEXTAREA');
    assert.equal(await form.getByLabel('Full name').evaluate((e) => (e as HTMLInputElement).required), true);
    assert.equal(await form.getByLabel('Phone').evaluate((e) => (e as HTMLInputElement).required), false);
    assert.equal(await form.locator('.req').count(), 3);
    // The form shows before the reply ends; until then the composer's button is "Stop" and the form's
    // submit is disabled (D-59: one turn at a time, the click not silently ignored).
    await idle(page);
    const whileStreaming = await submitSeen(page);
    assert.ok(whileStreaming.length > 0 && whileStreaming.every(Boolean), `disabled while the reply streamed: ${whileStreaming}`);
    assert.equal(await form.getByRole('button', { name: 'Send' }).isDisabled(), false, 'enabled once the reply ended');
    // The form's submit button and the composer's are told apart by name: one "Send" (the form's label), one "Send message".
    assert.deepEqual(await buttonNames(page), ['New chat', 'Close chat', 'Send', 'Send message']);
    // A required field left empty: nothing is sent.
    await form.getByRole('button', { name: 'Send' }).click();
    assert.equal(await page.locator('.parley-widget-host').locator('.msg.user').count(), 1);
    await form.getByLabel('Full name').fill('Ada Lovelace');
    await form.getByLabel('Email').fill('ada@example.com');
    await form.getByLabel('How can we help?').fill('A demo, please.\nOn Tuesday.');
    await form.getByRole('button', { name: 'Send' }).click();
    await page.getByText('Thank you! I received the “Contact us” form with 3 answers.').waitFor();
    await idle(page);
    assert.equal(await form.getByRole('button', { name: 'Send' }).isDisabled(), true, 'a sent form stays sent once the next reply ends');
    await panel(page).screenshot({ path: path.join(ARTIFACTS, 'widget-form.png') });
    const id = await storedConversation(page, 'app_genui');
    const rest = await parley.call('GET', `/apps/app_genui/conversations/${id}`);
    const users = rest.body.items.filter((i: any) => i.role === 'user').map((i: any) => i.content[0].text);
    assert.deepEqual(users, [
      'I would like someone to contact me',
      'Submitted the form "Contact us":\n- Full name: Ada Lovelace\n- Email: ada@example.com\n- Phone: (empty)\n- How can we help?: A demo, please.\n  On Tuesday.',
    ]);
    assert.ok(rest.body.items.some((i: any) => i.type === 'data_spec'));

    // A reload keeps the conversation, the submitted form included.
    await page.reload();
    await openPanel(page, 'Form Builder');
    await page.getByText('Thank you! I received the “Contact us” form with 3 answers.').waitFor();
    assert.equal(await page.locator('.parley-widget-host').locator('.msg.user').count(), 2);
    assert.equal(await form.getByLabel('Full name').isDisabled(), true);
    assert.equal(await storedConversation(page, 'app_genui'), id);
    assert.deepEqual(page.violations, []);
  });

  test('D-94: a form whose fields are named after form members (reportValidity, elements, submit, …) is filled and submitted', async () => {
    const page = await open(await visitorContext(), 'app_genui');
    await openPanel(page, 'Form Builder');
    await say(page, 'show me the clobber form');
    const form = page.locator('.parley-widget-host').locator('form.gen-form');
    await form.getByRole('button', { name: 'Submit' }).waitFor();
    // The form shows at its first patch, before its fields and before the reply ends: until then a patch
    // draws it again (emptying what was typed) and its submit button is disabled (D-59).
    await idle(page);
    // The required field left empty: the browser's own check still runs, and nothing is sent.
    await form.getByRole('button', { name: 'Submit' }).click();
    assert.equal(await page.locator('.parley-widget-host').locator('.msg.user').count(), 1);
    for (const name of CLOBBER_NAMES) await form.getByLabel(`Field ${name}`).fill(`value of ${name}`);
    await form.getByRole('button', { name: 'Submit' }).click();
    await page.getByText('Thank you! I received the “Clobber” form').waitFor();
    await idle(page);
    assert.equal(await form.getByLabel('Field submit').isDisabled(), true, 'marked submitted');
    const id = await storedConversation(page, 'app_genui');
    const rest = await parley.call('GET', `/apps/app_genui/conversations/${id}`);
    const users = rest.body.items.filter((i: any) => i.role === 'user').map((i: any) => i.content[0].text);
    assert.equal(users[1], ['Submitted the form "Clobber":', ...CLOBBER_NAMES.map((n) => `- Field ${n}: value of ${n}`)].join('\n'));
    assert.deepEqual(page.violations, []);
  });

  test('an agent reply containing HTML is shown as text', async () => {
    const page = await open(await visitorContext(), 'app_genui');
    await openPanel(page, 'Form Builder');
    await say(page, 'show me the markup form');
    const form = page.locator('.parley-widget-host').locator('form.gen-form');
    await form.getByRole('button', { name: '<u>Go</u>' }).waitFor();
    await idle(page);
    assert.ok((await agentTexts(page).first().textContent())!.includes(HTML_TITLE));
    assert.equal(await form.locator('h3').textContent(), HTML_TITLE);
    assert.ok(await form.getByLabel('<em>label</em>').isVisible());
    const root = page.locator('.parley-widget-host');
    assert.equal(await root.locator('img, b, i, u, em').count(), 0, "no element was made from the agent's text");
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    // D-59: a form not sent is held while a later reply streams too, and offered again when it ends.
    await watchSubmit(page);
    await say(page, 'hello');
    const later = await submitSeen(page);
    assert.ok(later.length > 0 && later.every(Boolean), `held while the next reply streamed: ${later}`);
    assert.equal(await form.getByRole('button', { name: '<u>Go</u>' }).isDisabled(), false);
  });

  test('a form without a submit label gets a submit button named "Submit form"', async () => {
    const page = await open(await visitorContext(), 'app_genui');
    // The reference always gives one (D-22); a form without it is made by taking it out of the reply on its way.
    await page.route(/\/widget\/v1\/apps\/app_genui\/conversations\/[^/]+$/, async (route) => {
      if (route.request().method() !== 'POST') return route.fallback();
      const response = await route.fetch();
      const body = await response.text();
      assert.match(body, /,"submit_label":"Book"/);
      await route.fulfill({ response, body: body.replace(/,"submit_label":"[^"]*"/, '') });
    });
    await openPanel(page, 'Form Builder');
    await say(page, 'I want to book an appointment');
    await panel(page).locator('form.gen-form').getByRole('button', { name: 'Submit form', exact: true }).waitFor();
    await idle(page);
    assert.deepEqual(await buttonNames(page), ['New chat', 'Close chat', 'Submit form', 'Send message']);
    assert.deepEqual(page.violations, []);
  });

  test('a failed reply is shown as failed, with a retry', async () => {
    const page = await open(await visitorContext(), 'app_faulty');
    await openPanel(page, 'Gremlin');
    await say(page, 'tell me a long story about streams');
    const failed = page.locator('.parley-widget-host').locator('.msg.agent.failed');
    await failed.getByRole('button', { name: 'Retry' }).waitFor();
    assert.match((await failed.locator('.error').textContent())!, /^Reply failed: .*fail after 3 events/);
    await failed.getByRole('button', { name: 'Retry' }).click();
    await page.locator('.parley-widget-host').locator('.msg.agent.failed').nth(1).waitFor();
    assert.equal(await page.locator('.parley-widget-host').locator('.msg.user').count(), 2);
  });

  test('a reply stopped by the visitor is cancelled through the widget API, shown as cancelled with a retry; the server kept it failed/cancelled (D-33)', async () => {
    const page = await open(await visitorContext(), 'app_slow');
    await openPanel(page, 'Snail');
    const persisted = once(parley.responses.events, 'persisted');
    await say(page, 'tell me something long');
    await agentTexts(page).first().waitFor();
    await page.locator('parley-widget').getByRole('button', { name: 'Stop' }).click();
    const failed = page.locator('parley-widget').locator('.msg.agent.failed');
    await failed.getByRole('button', { name: 'Retry' }).waitFor();
    assert.equal(await failed.locator('.error').textContent(), 'Reply cancelled.');
    const [saved] = await persisted;
    assert.equal(saved.status, 'failed');
    const r = (await (
      await fetch(`${parley.baseUrl}/apps/app_slow/responses/${saved.id}`, { headers: { authorization: `Bearer ${KEY}` } })
    ).json()) as { error: { code: string } };
    assert.equal(r.error.code, 'cancelled');
    assert.equal(await page.locator('parley-widget').getByRole('button', { name: 'Send' }).isVisible(), true);
  });

  test('a page on an origin the app does not list is refused', async () => {
    const page = await open(await visitorContext(), 'app_demo', evil.origin);
    await page
      .locator('.parley-widget-host')
      .locator('.panel')
      .getByText(/The chat is unavailable/)
      .waitFor({ state: 'attached' });
    // The browser itself could not read the widget API's answer (no CORS for this origin).
    const read = await page.evaluate(
      async ([base, key]) => {
        try {
          const r = await fetch(`${base}/widget/v1/apps/app_demo/visitors`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: '{}',
          });
          return `status ${r.status}`;
        } catch (e) {
          return `blocked: ${(e as Error).name}`;
        }
      },
      [host.parley, PK],
    );
    assert.equal(read, 'blocked: TypeError');
  });

  test("a second visitor cannot read the first one's conversation", async () => {
    const first = await open(await visitorContext(), 'app_demo');
    await openPanel(first, 'Parley Assistant');
    await say(first, 'hello');
    await first.getByText(/Hello! I'm Parley Assistant/).waitFor();
    const id = await storedConversation(first, 'app_demo');
    const second = await open(await visitorContext(), 'app_demo');
    await openPanel(second, 'Parley Assistant');
    await second.getByText('Ask Parley Assistant anything.').waitFor();
    // Even told the first visitor's conversation id, the second visitor's session gets a 404…
    const status = await second.evaluate(
      async ([base, app, conv]) => {
        const saved = JSON.parse(localStorage.getItem(`parley-widget:${base}:${app}`)!);
        const r = await fetch(`${base}/widget/v1/apps/${app}/conversations/${conv}`, {
          headers: { authorization: `Bearer ${saved.token}` },
        });
        return r.status;
      },
      [host.parley, 'app_demo', id],
    );
    assert.equal(status, 404);
    // …and a widget pointed at it starts afresh rather than showing it.
    await second.evaluate(
      ([base, app, conv]) => {
        const key = `parley-widget:${base}:${app}`;
        localStorage.setItem(key, JSON.stringify({ ...JSON.parse(localStorage.getItem(key)!), conversationId: conv }));
      },
      [host.parley, 'app_demo', id],
    );
    await second.reload();
    await openPanel(second, 'Parley Assistant');
    await second.getByText('Ask Parley Assistant anything.').waitFor();
    assert.equal(await second.locator('.parley-widget-host').locator('.msg').count(), 0);
  });

  test("the publishable key cannot call the REST API, even from the server's own origin", async () => {
    const page = await (await visitorContext()).newPage();
    await page.goto(`${originOf(parley)}/`);
    const answer = await page.evaluate(async (key) => {
      const r = await fetch('/v1/apps/app_demo/config', { headers: { authorization: `Bearer ${key}` } });
      return { status: r.status, body: await r.json() };
    }, PK);
    assert.equal(answer.status, 403);
    assert.deepEqual([answer.body.error.type, answer.body.error.code], ['access_denied', 'publishable_key']);
  });

  test('keyboard only, at 360 px wide, with no serious or critical axe-core violation', async () => {
    const page = await open(await visitorContext({ width: 360, height: 740 }), 'app_genui');
    await launcher(page).filter({ hasText: 'Form Builder' }).waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.className), 'parley-widget-host');
    await page.keyboard.press('Enter');
    await panel(page).waitFor({ state: 'visible' });
    await page.keyboard.type('I need a contact form');
    await page.keyboard.press('Enter');
    const form = page.locator('.parley-widget-host').locator('form.gen-form');
    await form.getByRole('button', { name: 'Send' }).waitFor();
    // The form shows at its first patch, before the reply ends: until then a later patch draws it again
    // (the focus and what was typed go with it) and its submit button is disabled (D-59).
    await idle(page);
    const box = (await panel(page).boundingBox())!;
    assert.ok(box.x >= 0 && box.x + box.width <= 360, `panel at ${box.x}..${box.x + box.width}`);
    assert.ok(box.y >= 0 && box.y + box.height <= 740);
    // The form can be reached and filled by keyboard: Tab moves into its fields.
    await form.getByLabel('Full name').focus();
    await page.keyboard.type('Grace');
    await page.keyboard.press('Tab');
    assert.equal(await form.getByLabel('Email').evaluate((e) => e === (e.getRootNode() as ShadowRoot).activeElement), true);
    // The widget only: the host page's own (deliberately hostile) colors are the host's business.
    assert.deepEqual(await axe(page, 'parley-widget'), []);
    // …and submitted by keyboard: the focus goes to the composer, not to <body>.
    await page.keyboard.type('grace@example.com');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.type('A call, please.');
    await page.keyboard.press('Tab');
    assert.equal(await focused(page), 'BUTTON Send');
    await page.keyboard.press('Enter');
    assert.equal(await focused(page), 'TEXTAREA Write a message…');
    await page.getByText('Thank you! I received the “Contact us” form with 3 answers.').waitFor();
    await idle(page);
    assert.equal(await focused(page), 'TEXTAREA Write a message…');
    // Escape closes the panel and gives the focus back to the launcher.
    await page.keyboard.press('Escape');
    await panel(page).waitFor({ state: 'hidden' });
    assert.equal(await launcher(page).evaluate((b) => b === (b.getRootNode() as ShadowRoot).activeElement), true);
    assert.deepEqual(await axe(page, 'parley-widget', false), []);
  });

  test('the playground: pick an app, chat, and watch the events and the form document', async () => {
    const page = await (await visitorContext({ width: 1400, height: 900 })).newPage();
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
    });
    await page.goto(`${originOf(parley)}/`);
    await page.getByLabel('App').selectOption('app_genui');
    await page.locator('#chat').getByRole('heading', { name: 'Form Builder' }).waitFor();
    await page.locator('#chat').getByLabel('Message', { exact: true }).fill('I want to book an appointment');
    await page.locator('#chat').getByLabel('Message', { exact: true }).press('Enter');
    await page.locator('#events tr').filter({ hasText: 'response.completed' }).waitFor();
    // Names wrap after a dot only, data between values: no word is cut, at this width or a narrower one.
    assert.deepEqual(await wordsCut(page), { names: [], data: [] });
    await page.setViewportSize({ width: 1000, height: 900 });
    assert.deepEqual(await wordsCut(page), { names: [], data: [] });
    await page.setViewportSize({ width: 1400, height: 900 });
    const rows = await page
      .locator('#events tr.event')
      .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    // Each event's row is followed by its data, which reads as the JSON it is.
    const data = await page.locator('#events tr.event + tr.data td').allTextContents();
    assert.equal(data.length, rows.length);
    assert.equal(JSON.parse(data[0]!).status, 'in_progress');
    assert.deepEqual(rows[0]!.slice(0, 2), ['0', 'response.created']);
    assert.deepEqual(
      rows.map((r) => Number(r[0])),
      rows.map((_, i) => i),
      'sequence numbers from 0 without gaps',
    );
    assert.ok(rows.some((r) => r[1] === 'response.data_spec'));
    const doc = JSON.parse((await page.locator('#doc').textContent())!);
    assert.equal(doc.form.title, 'Book an appointment');
    assert.ok(doc.form.fields.length > 0);
    assert.match(
      (await page.locator('#tag').textContent())!,
      /^<script src="http:\/\/127\.0\.0\.1:\d+\/widget\.js" data-app-id="app_genui" data-publishable-key="pk_live_/,
    );
    assert.deepEqual(await axe(page), []);
    assert.deepEqual(violations, []);
    // The icon a browser asks for is no 404.
    assert.equal(await page.evaluate(async () => (await fetch('/favicon.ico')).status), 204);
    await page.screenshot({ path: path.join(ARTIFACTS, 'playground.png') });
  });

  test('the playground at 360 px: no sideways scrolling, and a reload keeps the app and opens at the latest message', async () => {
    const page = await (await visitorContext({ width: 360, height: 740 })).newPage();
    await page.goto(`${originOf(parley)}/`);
    await page.getByLabel('App').selectOption('app_genui');
    await page.locator('#chat').getByRole('heading', { name: 'Form Builder' }).waitFor();
    await page.locator('#chat').getByLabel('Message', { exact: true }).fill('I want to book an appointment');
    await page.locator('#chat').getByLabel('Message', { exact: true }).press('Enter');
    await page.locator('#events tr').filter({ hasText: 'response.completed' }).waitFor();
    const width = () => page.evaluate(() => [document.scrollingElement!.scrollWidth, innerWidth]);
    const [wide, viewport] = await width();
    assert.ok(wide! <= viewport!, `the page is ${wide} px wide in a ${viewport} px viewport`);
    assert.deepEqual(await wordsCut(page), { names: [], data: [] });
    assert.deepEqual(await axe(page), []);
    await page.screenshot({ path: path.join(ARTIFACTS, 'playground-360.png'), fullPage: true });
    await page.reload();
    assert.equal(await page.getByLabel('App', { exact: true }).inputValue(), 'app_genui');
    // The conversation read back is drawn in one go, scrolled to its end: its last message is in view.
    await page
      .locator('#chat')
      .getByText(/^Fill it in and press “Book”/)
      .waitFor();
    const { top, height, full } = await page
      .locator('#chat')
      .getByRole('log')
      .evaluate((l) => ({ top: l.scrollTop, height: l.clientHeight, full: l.scrollHeight }));
    assert.ok(full > height * 1.2, `the history (${full} px) is taller than the panel (${height} px)`);
    assert.ok(top + height >= full - 1, `scrolled to ${top} of ${full - height} px`);
    const [after, inner] = await width();
    assert.ok(after! <= inner!, `the page is ${after} px wide in a ${inner} px viewport`);
  });
});

/**
 * Where the playground's event table cuts a word: each line break of an event name that is not after
 * a dot, and each line break of a data cell between two letters or digits.
 */
async function wordsCut(page: Page): Promise<{ names: string[]; data: string[] }> {
  const cuts = (cells: Element[], allowed: string) =>
    cells.flatMap((cell) => {
      const out: string[] = [];
      const range = document.createRange();
      const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      let prev: { top: number; ch: string } | undefined;
      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        const text = n.textContent ?? '';
        for (let i = 0; i < text.length; i++) {
          range.setStart(n, i);
          range.setEnd(n, i + 1);
          const r = range.getClientRects()[0];
          // A space where the line wraps takes no room: it is still what the break came after.
          if (!r?.width) {
            if (prev) prev.ch = text[i]!;
            continue;
          }
          if (prev && r.top > prev.top + r.height / 2 && !new RegExp(allowed, 'u').test(`${prev.ch}${text[i]}`))
            out.push(`${cell.textContent!.slice(0, 40)}: ${prev.ch}|${text[i]}`);
          prev = { top: r.top, ch: text[i]! };
        }
      }
      return out;
    });
  return {
    names: await page.locator('#events tr > td:nth-child(2)').evaluateAll(cuts, '^\\.'),
    data: await page.locator('#events tr.data > td, #events tr > td:nth-child(4)').evaluateAll(cuts, '[^\\p{L}\\p{N}_]'),
  };
}

/** axe-core's serious and critical violations (WCAG 2.1 A and AA), the shadow DOM included. */
async function axe(page: Page, only?: string, withControls = true): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(AXE);
  const { violations, labelled } = await page.evaluate(async (only) => {
    type Result = { id: string; impact: string; nodes: Array<{ target: unknown }> };
    const axe = (window as unknown as { axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: Result[]; passes: Result[] }> } })
      .axe;
    const r = await axe.run(only ? { include: [only] } : document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
    });
    return {
      violations: r.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => `${v.impact} ${v.id}: ${JSON.stringify(v.nodes.map((n) => n.target))}`),
      // How many form controls axe found labelled: proof that it looked inside the shadow root.
      labelled: r.passes.find((p) => p.id === 'label')?.nodes.length ?? 0,
    };
  }, only);
  if (withControls) assert.ok(labelled > 0, "axe-core checked the form controls (the shadow root's too)");
  return violations;
}

void KEY;
