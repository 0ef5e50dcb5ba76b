// Webhooks (docs/webhooks.md, D-80…D-87): a team's endpoints per app, with their events and state (and why
// one is disabled); an admin adds, enables, disables and deletes them (a confirmation naming the endpoint).
// The signing secret's derivation is explained, never shown: the page holds no key to derive it from (D-98).
import { api, listAll, qs } from './api.ts';
import { appChooser, teamApps } from './apps.ts';
import { confirmDialog } from './dialog.ts';
import { clearFieldErrors, errorNotice, field, fieldError, h, notice, showRefusal, table, when } from './dom.ts';
import type { PageContext } from './main.ts';
import { WEBHOOK_EVENT_TYPES } from '../src/contract/webhook-event-types.ts';
import type { ApiKey, List, WebhookEndpoint } from './types.ts';

/** D-150: the team's keys, to name an endpoint's signing key and to choose one. */
export const teamKeys = () => listAll<ApiKey>('/keys').then((l) => l.data);

/** D-150: the key an endpoint is signed with, by its name and listed form, and what its state asks of the owner. */
export function signingKeyText(e: WebhookEndpoint, keys: ApiKey[]): string {
  const k = keys.find((x) => x.id === e.signing_key_id);
  const name = k ? `${k.name || k.id} (${k.redacted})` : (e.signing_key_id ?? 'none');
  if (e.signing_key_state === 'rolled') return `${name}, rolled: its successor signs too; move the endpoint to it before the grace ends`;
  if (e.signing_key_state !== 'active') return `${name}, ${e.signing_key_state}: nothing is sent until another key is chosen`;
  return name;
}

/** D-150: a choice among the team's secret keys that sign now; `none` labels the server's default. */
export function signingKeySelect(id: string, keys: ApiKey[], selected: string | null, none?: string): HTMLSelectElement {
  const now = Date.now() / 1000;
  const working = keys.filter((k) => k.type === 'secret' && k.revoked_at === null && (k.expires_at === null || k.expires_at > now));
  const options = working.map((k) => h('option', { value: k.id, selected: k.id === selected }, `${k.name || k.id} (${k.redacted})`));
  return h('select', { id }, ...(none ? [h('option', { value: '' }, none)] : []), ...options);
}

/**
 * D-82's rule for an endpoint's address, as its field says it: loopback is accepted in local development
 * only (D-170), other private addresses only with the setting.
 */
const URL_HINT =
  'Such as https://hooks.shop.example/parley. Private and special addresses (10/8, 192.168/16, 169.254/16, …) are refused unless Parley runs with --webhook-allow-private; loopback (127.0.0.1, localhost) is accepted only in local development: Parley itself on loopback, without --public-url.';

/** D-86: why an endpoint gets nothing. */
export function endpointState(e: WebhookEndpoint): string {
  if (e.enabled) return 'Enabled';
  if (e.disabled_reason === 'gone') return 'Disabled: it answered 410 Gone';
  if (e.disabled_reason === 'failing') return 'Disabled: its deliveries failed for too long';
  if (e.disabled_reason === 'signing_key') return 'Disabled: its signing key no longer works';
  return 'Disabled by an admin';
}

export const eventsText = (events: string[]) => (events.includes('*') ? 'All events' : events.join(', '));

/** An endpoint as a person names it: its description, else its URL. */
export const endpointName = (e: WebhookEndpoint) => e.description || e.url;

/** The event types as checkboxes ("all" among them); `value()` is the list the admin surface takes. */
export function eventsFieldset(prefix: string, selected: string[]): { el: HTMLElement; value: () => string[]; first: HTMLInputElement } {
  const boxes = ['*', ...WEBHOOK_EVENT_TYPES].map((t) =>
    h('input', { type: 'checkbox', id: `${prefix}-${t === '*' ? 'all' : t.replace('.', '-')}`, value: t, checked: selected.includes(t) }),
  );
  const el = h(
    'fieldset',
    { class: 'events' },
    h('legend', {}, 'Events'),
    ...boxes.map((b) =>
      h('div', { class: 'check' }, b, h('label', { for: b.id }, b.value === '*' ? 'All events, those added later too' : b.value)),
    ),
  );
  return { el, value: () => boxes.filter((b) => b.checked).map((b) => b.value), first: boxes[0]! };
}

/** D-80, in words: how a receiver gets the secret that verifies a delivery. */
export function signingExplained(): HTMLElement {
  return h(
    'section',
    { 'aria-labelledby': 'signing-title' },
    h('h2', { id: 'signing-title' }, 'How deliveries are signed'),
    h(
      'p',
      {},
      'Each delivery is a POST of the event’s JSON with the headers webhook-id, webhook-timestamp and webhook-signature (Standard Webhooks). ' +
        'It is signed with the secret key chosen for its endpoint (by default the team’s oldest working one), and while that key is in a roll’s grace with its successor too, so new keys never change what a receiver verifies with. ' +
        'When the key is revoked or its grace ends, the endpoint is disabled and says so; choose another key in its settings to resume.',
    ),
    h(
      'p',
      {},
      'A key’s signing secret is derived from the key: whsec_ followed by the base64 of HMAC-SHA256, keyed with the whole secret key (sk_live_ included), of the text “parley webhook signing v1”. ',
      'Compute it where the key is kept, or run ',
      h('code', {}, 'parley webhooks secret --endpoint ID'),
      ' there. The dashboard never shows a signing secret: it holds no key to derive one from.',
    ),
  );
}

export async function webhooksPage(c: PageContext): Promise<void> {
  const { main, params } = c;
  const appId = params.get('app') ?? '';
  const [apps, keys] = await Promise.all([teamApps(), teamKeys()]);
  const status = h('div', { class: 'status' });
  const listArea = h('div', {});
  const fail = (err: unknown) => status.replaceChildren(errorNotice(err));

  const filter = appChooser('wh-filter-app', apps, appId, 'All apps');
  const filterForm = h(
    'form',
    { class: 'inline-form', 'aria-label': 'Endpoints of an app', novalidate: true },
    field('App', filter),
    h('button', { type: 'submit' }, 'Show'),
  );
  filterForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    location.hash = `#/webhooks${qs({ app: filter.value.trim() })}`;
  });

  const refresh = async (focusId?: string) => {
    const list = await api<List<WebhookEndpoint>>('GET', `/webhook_endpoints${qs({ app_id: appId })}`);
    const rows = list.data.map((e) => {
      const actions = h('div', { class: 'row-actions' });
      if (c.canWrite)
        actions.append(
          h(
            'button',
            { type: 'button', id: `wh-toggle-${e.id}`, onclick: () => toggle(e) },
            e.enabled ? 'Disable' : 'Enable',
            h('span', { class: 'visually-hidden' }, ` ${endpointName(e)}`),
          ),
          h(
            'button',
            { type: 'button', class: 'danger', onclick: (ev: Event) => remove(e, ev.currentTarget as Element) },
            'Delete',
            h('span', { class: 'visually-hidden' }, ` ${endpointName(e)}`),
          ),
        );
      return [
        h('a', { href: `#/webhook/${encodeURIComponent(e.id)}` }, e.url),
        h('span', {}, e.description || '—'),
        h('code', {}, e.app_id),
        h('span', {}, eventsText(e.events)),
        h('span', {}, endpointState(e)),
        h('span', {}, signingKeyText(e, keys)),
        h('span', {}, when(e.created_at)),
        actions,
      ];
    });
    listArea.replaceChildren(
      rows.length
        ? table(
            ['URL (its delivery log)', 'Description', 'App', 'Events', 'State', 'Signing key', 'Created', 'Actions'],
            rows,
            'Webhook endpoints',
          )
        : h('p', {}, appId ? 'This app has no endpoints yet.' : 'No endpoints yet.'),
    );
    if (focusId) document.getElementById(focusId)?.focus();
  };

  const toggle = async (e: WebhookEndpoint) => {
    const id = `wh-toggle-${e.id}`;
    try {
      const now = await api<WebhookEndpoint>('PATCH', `/webhook_endpoints/${encodeURIComponent(e.id)}`, { enabled: !e.enabled });
      status.replaceChildren(notice('ok', `${endpointName(now)}: ${endpointState(now).toLowerCase()}.`));
      await refresh(id);
    } catch (err) {
      fail(err);
      document.getElementById(id)?.focus();
    }
  };

  const remove = (e: WebhookEndpoint, opener: Element) =>
    confirmDialog(
      `Delete the endpoint ${endpointName(e)}?`,
      `${e.url}${e.description ? ` (${e.description})` : ''} gets no more events, and its pending deliveries end failed. This cannot be undone.`,
      'Delete endpoint',
      {
        act: () => api('DELETE', `/webhook_endpoints/${encodeURIComponent(e.id)}`).then(() => {}),
        done: async () => {
          status.replaceChildren(notice('ok', `The endpoint ${endpointName(e)} was deleted.`));
          await refresh();
          (document.getElementById('wh-add') ?? document.querySelector<HTMLElement>('main h1'))?.focus();
        },
        fail,
      },
      opener,
    );

  main.append(filterForm);
  if (c.canWrite) main.append(h('h2', {}, 'Add an endpoint'), createForm(apps, keys, appId, status, refresh));
  else main.append(h('p', {}, 'You are a viewer: endpoints are added, changed and deleted by the team’s admins.'));
  main.append(status, h('h2', {}, 'Endpoints'), listArea, signingExplained());
  await refresh();
}

function createForm(
  apps: { id: string; name: string }[] | null,
  keys: ApiKey[],
  appId: string,
  status: HTMLElement,
  refresh: (focusId?: string) => Promise<void>,
): HTMLFormElement {
  const app = appChooser('wh-app', apps, appId || apps?.[0]?.id || '');
  const url = h('input', { type: 'url', id: 'wh-url', required: true, autocomplete: 'off', maxlength: 2048 });
  const description = h('input', { type: 'text', id: 'wh-description', maxlength: 500, autocomplete: 'off' });
  const events = eventsFieldset('wh-new', ['*']);
  const signingKey = signingKeySelect('wh-signing-key', keys, null, 'The team’s oldest working key');
  const add = h('button', { type: 'submit', class: 'primary', id: 'wh-add' }, 'Add endpoint');
  const byParam: Record<string, HTMLElement> = { app_id: app, url, events: events.first, description, signing_key_id: signingKey };
  const form = h(
    'form',
    { class: 'settings', 'aria-label': 'Add an endpoint', novalidate: true },
    field('App', app),
    field('URL', url, URL_HINT),
    events.el,
    field('Description (optional)', description),
    field('Signing key', signingKey, 'Its receiver verifies deliveries with this key’s signing secret.'),
    add,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearFieldErrors(form);
    status.replaceChildren();
    const chosen = events.value();
    if (!url.value.trim()) return fieldError(url, 'Give the URL the events go to.');
    if (chosen.length === 0) return fieldError(events.first, 'Choose at least one event.');
    try {
      const made = await api<WebhookEndpoint>('POST', '/webhook_endpoints', {
        app_id: app.value.trim(),
        url: url.value.trim(),
        events: chosen,
        ...(description.value.trim() ? { description: description.value.trim() } : {}),
        ...(signingKey.value ? { signing_key_id: signingKey.value } : {}),
      });
      url.value = '';
      description.value = '';
      status.append(notice('ok', `Endpoint ${made.url} added: it gets ${eventsText(made.events).toLowerCase()} of ${made.app_id}.`));
      add.focus();
      await refresh();
    } catch (err) {
      showRefusal(status, err, byParam, add);
    }
  });
  return form;
}
