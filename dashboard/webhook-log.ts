// An endpoint's page (its settings and its delivery log) and an event's page (its payload as sent and
// its deliveries to every endpoint): each delivery with its state, its attempts with status and timing
// (D-87), redeliver and a test event (D-129) for an admin. Payloads and answers are text (D-97).
import { api, qs } from './api.ts';
import { clearFieldErrors, errorNotice, field, h, notice, showRefusal, table, when, whenToSecond } from './dom.ts';
import type { PageContext } from './main.ts';
import type { ApiKey, List, WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent } from './types.ts';
import { testEventForm } from './webhook-test.ts';
import {
  endpointName,
  endpointState,
  eventsFieldset,
  eventsText,
  signingExplained,
  signingKeySelect,
  signingKeyText,
  teamKeys,
} from './webhooks.ts';

const LOG_LIMIT = 50;

function answer(a: WebhookAttempt | null): string {
  if (!a) return '—';
  return a.status === null ? `no answer: ${a.error ?? 'failed'}` : `HTTP ${a.status}${a.error ? ` (${a.error})` : ''}`;
}

function deliveryState(d: WebhookDelivery): string {
  if (d.state === 'pending') return d.next_attempt_at ? `Pending: next attempt ${whenToSecond(d.next_attempt_at)}` : 'Pending';
  if (d.state === 'skipped') return 'Skipped: the endpoint was disabled';
  return d.state === 'succeeded' ? 'Succeeded' : 'Failed';
}

/** Seconds as a person reads a delay between attempts: `12 s`, `5 min 0 s`, `2 h 0 min`. */
export function delayText(s: number): string {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/**
 * Every attempt, newest first, behind a disclosure (keyboard: Enter or Space on its summary); each to the
 * second, with the delay since the attempt before it (D-154: retries a few seconds apart read apart).
 */
function attemptLog(d: WebhookDelivery): HTMLElement {
  if (d.attempt_log.length === 0) return h('span', {}, '0');
  return h(
    'details',
    {},
    h('summary', {}, `${d.attempts}`, h('span', { class: 'visually-hidden' }, ` attempts of ${d.event_id}`)),
    h(
      'ol',
      { class: 'attempts' },
      ...d.attempt_log.map((a, i) => {
        const before = d.attempt_log[i + 1];
        const after = before ? `, ${delayText(a.created_at - before.created_at)} after the attempt before` : ', the first attempt';
        return h(
          'li',
          {},
          `${whenToSecond(a.created_at)}: ${answer(a)}, ${a.duration_ms} ms${after}`,
          a.response ? h('pre', { class: 'answer' }, a.response) : null,
        );
      }),
    ),
  );
}

interface LogOptions {
  /** The query of `GET /webhook_deliveries`: one endpoint's deliveries, or one event's. */
  query: { endpoint_id?: string; event_id?: string };
  canWrite: boolean;
  status: HTMLElement;
}

/** The delivery log, with a Refresh (deliveries go on after the page is drawn) and Redeliver per row. */
function deliveryLog(o: LogOptions): { el: HTMLElement; refresh: (focusId?: string) => Promise<void> } {
  const area = h('div', {});
  const perEvent = o.query.event_id !== undefined;
  const failedOnly = h('input', { type: 'checkbox', id: 'log-failed-only' });
  let shown: WebhookDelivery[] = [];
  // D-156: "Failed only" asks the server for the failed ones (the 50 newest failed, not those among the 50 newest).
  const refresh = async (focusId?: string) => {
    const failed = failedOnly.checked ? 'true' : undefined;
    shown = (await api<List<WebhookDelivery>>('GET', `/webhook_deliveries${qs({ ...o.query, failed, limit: LOG_LIMIT })}`)).data;
    draw(focusId);
  };
  const draw = (focusId?: string) => {
    const rows = shown.map((d) => {
      const actions = h('div', { class: 'row-actions' });
      if (o.canWrite)
        actions.append(
          h(
            'button',
            { type: 'button', id: `redeliver-${d.id}`, onclick: () => redeliver(d) },
            'Redeliver',
            h('span', { class: 'visually-hidden' }, ` ${d.event_id}`),
          ),
        );
      return [
        perEvent
          ? h('a', { href: `#/webhook/${encodeURIComponent(d.endpoint_id)}` }, d.endpoint_id)
          : h('a', { href: `#/webhook-event/${encodeURIComponent(d.event_id)}` }, d.event_id),
        h('span', {}, d.event_type),
        h('span', {}, deliveryState(d)),
        attemptLog(d),
        h('span', {}, whenToSecond(d.last_attempt?.created_at)),
        h('span', {}, answer(d.last_attempt)),
        h('span', {}, d.last_attempt ? `${d.last_attempt.duration_ms} ms` : '—'),
        actions,
      ];
    });
    area.replaceChildren(
      rows.length
        ? table(
            [perEvent ? 'Endpoint' : 'Event', 'Type', 'State', 'Attempts', 'Last attempt', 'Answer', 'Took', 'Actions'],
            rows,
            'Deliveries',
          )
        : h('p', {}, failedOnly.checked ? 'No failed deliveries.' : 'No deliveries yet.'),
    );
    if (focusId) document.getElementById(focusId)?.focus();
  };
  failedOnly.addEventListener('change', () => void refresh().catch((err) => o.status.replaceChildren(errorNotice(err))));
  const redeliver = async (d: WebhookDelivery) => {
    const id = `redeliver-${d.id}`;
    try {
      await api('POST', `/events/${encodeURIComponent(d.event_id)}/redeliver`, { endpoint_id: d.endpoint_id });
      o.status.replaceChildren(notice('ok', `${d.event_id} is sent again to ${d.endpoint_id}; Refresh shows how it went.`));
      await refresh(id);
    } catch (err) {
      o.status.replaceChildren(errorNotice(err));
      document.getElementById(id)?.focus();
    }
  };
  const again = h('button', { type: 'button', id: 'log-refresh' }, 'Refresh');
  again.addEventListener('click', () => void refresh('log-refresh').catch((err) => o.status.replaceChildren(errorNotice(err))));
  const el = h(
    'section',
    { 'aria-labelledby': 'log-title' },
    h('h2', { id: 'log-title' }, `Delivery log (the ${LOG_LIMIT} newest)`),
    h(
      'div',
      { class: 'row-actions' },
      again,
      h('div', { class: 'check' }, failedOnly, h('label', { for: 'log-failed-only' }, 'Failed only (failed, or retrying after a failure)')),
    ),
    o.canWrite && o.query.endpoint_id !== undefined ? redeliverFailed(o.query.endpoint_id, o.status, refresh) : null,
    area,
  );
  return { el, refresh };
}

/** The spans "Redeliver every failed since …" offers, in seconds ago. */
const SPANS: [string, number][] = [
  ['1 hour', 3600],
  ['24 hours', 86_400],
  ['7 days', 7 * 86_400],
];

/**
 * D-156: every delivery of the endpoint that ended failed, of events since the span chosen, sent again by
 * the server (`POST /webhook_deliveries/redeliver`, called again while it says `has_more`).
 */
function redeliverFailed(endpointId: string, status: HTMLElement, refresh: (focusId?: string) => Promise<void>): HTMLElement {
  const span = h('select', { id: 'redeliver-failed-since' }, ...SPANS.map(([label, s]) => h('option', { value: String(s) }, label)));
  span.value = '86400';
  const button = h('button', { type: 'button', id: 'redeliver-failed' }, 'Redeliver every failed');
  button.addEventListener('click', async () => {
    button.disabled = true;
    const since = Math.floor(Date.now() / 1000) - Number(span.value);
    let sent = 0;
    try {
      for (;;) {
        const r = await api<{ deliveries: number; has_more: boolean }>('POST', '/webhook_deliveries/redeliver', {
          since,
          endpoint_id: endpointId,
        });
        sent += r.deliveries;
        if (!r.has_more || r.deliveries === 0) break;
      }
      const text = sent
        ? `${sent} failed deliver${sent === 1 ? 'y is' : 'ies are'} sent again; Refresh shows how it went.`
        : 'No delivery failed in that span.';
      status.replaceChildren(notice('ok', text));
      await refresh();
    } catch (err) {
      status.replaceChildren(errorNotice(err));
    }
    button.disabled = false;
    button.focus();
  });
  return h('div', { class: 'row-actions' }, h('label', { for: 'redeliver-failed-since' }, 'Failed since'), span, button);
}

export async function endpointPage(c: PageContext): Promise<void> {
  const [id = ''] = c.rest;
  const path = `/webhook_endpoints/${encodeURIComponent(id)}`;
  const [e, keys] = await Promise.all([api<WebhookEndpoint>('GET', path), teamKeys()]);
  document.querySelector('main h1')!.textContent = `Endpoint ${endpointName(e)}`;
  const status = h('div', { class: 'status' });
  const facts = h('dl', { class: 'facts' });
  const showFacts = () =>
    facts.replaceChildren(
      ...(
        [
          ['URL', e.url],
          ['Id', e.id],
          ['App', e.app_id],
          ['Events', eventsText(e.events)],
          ['State', endpointState(e)],
          ['Signing key', signingKeyText(e, keys)],
          ['Changed', when(e.updated_at)],
        ] as [string, string][]
      ).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
    );
  showFacts();
  c.main.append(h('p', {}, h('a', { href: `#/webhooks${qs({ app: e.app_id })}` }, 'Back to the endpoints')), facts);
  if (c.canWrite) c.main.append(h('h2', {}, 'Settings'), settingsForm(e, keys, path, status, showFacts));
  const log = deliveryLog({ query: { endpoint_id: e.id }, canWrite: c.canWrite, status });
  // D-129: an admin's, as the API's route is.
  if (c.canWrite)
    c.main.append(
      h('h2', {}, 'Send test event'),
      testEventForm(e, status, () => log.refresh()),
    );
  c.main.append(status, log.el, signingExplained());
  await log.refresh();
}

function settingsForm(e: WebhookEndpoint, keys: ApiKey[], path: string, status: HTMLElement, redraw: () => void): HTMLFormElement {
  const url = h('input', { type: 'url', id: 'wh-edit-url', value: e.url, required: true, maxlength: 2048 });
  const description = h('input', { type: 'text', id: 'wh-edit-description', value: e.description, maxlength: 500 });
  const events = eventsFieldset('wh-edit', e.events);
  const enabled = h('input', { type: 'checkbox', id: 'wh-edit-enabled', checked: e.enabled });
  // D-150: a key that no longer works is not offered: choosing a working one also resumes the endpoint.
  const signingKey = signingKeySelect(
    'wh-edit-signing-key',
    keys,
    e.signing_key_id,
    e.signing_key_state === 'active' ? undefined : 'Choose a working key',
  );
  const save = h('button', { type: 'submit', class: 'primary', id: 'wh-save' }, 'Save changes');
  const byParam: Record<string, HTMLElement> = { url, description, events: events.first, enabled, signing_key_id: signingKey };
  const form = h(
    'form',
    { class: 'settings', 'aria-label': 'Endpoint settings', novalidate: true },
    field('URL', url),
    events.el,
    field('Description', description),
    field('Signing key', signingKey, 'Its receiver verifies deliveries with this key’s signing secret.'),
    h(
      'div',
      { class: 'check' },
      enabled,
      h('label', { for: 'wh-edit-enabled' }, 'Enabled (enabling it again also ends a 410 Gone or failing state)'),
    ),
    save,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearFieldErrors(form);
    status.replaceChildren();
    const change: Record<string, unknown> = {};
    if (url.value.trim() !== e.url) change.url = url.value.trim();
    if (description.value !== e.description) change.description = description.value;
    const chosen = events.value();
    if (chosen.join() !== e.events.join()) change.events = chosen;
    if (enabled.checked !== e.enabled) change.enabled = enabled.checked;
    if (signingKey.value && signingKey.value !== e.signing_key_id) change.signing_key_id = signingKey.value;
    if (Object.keys(change).length === 0) return void status.append(notice('ok', 'Nothing changed.'));
    try {
      Object.assign(e, await api<WebhookEndpoint>('PATCH', path, change));
      redraw();
      enabled.checked = e.enabled;
      status.append(notice('ok', `Saved: ${endpointState(e).toLowerCase()}.`));
      save.focus();
    } catch (err) {
      showRefusal(status, err, byParam, save);
    }
  });
  return form;
}

export async function eventPage(c: PageContext): Promise<void> {
  const [id = ''] = c.rest;
  const event = await api<WebhookEvent>('GET', `/events/${encodeURIComponent(id)}`);
  document.querySelector('main h1')!.textContent = `Event ${event.id}`;
  const status = h('div', { class: 'status' });
  const log = deliveryLog({ query: { event_id: event.id }, canWrite: c.canWrite, status });
  c.main.append(
    h('p', {}, h('a', { href: `#/webhooks${qs({ app: event.app_id })}` }, 'Back to the endpoints')),
    h(
      'dl',
      { class: 'facts' },
      ...(
        [
          ['Type', event.type],
          ['App', event.app_id],
          ['Made', whenToSecond(event.created_at)],
        ] as [string, string][]
      ).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
    ),
  );
  if (c.canWrite) {
    const all = h('button', { type: 'button', id: 'redeliver-all' }, 'Redeliver to every endpoint');
    all.addEventListener('click', async () => {
      try {
        const r = await api<{ endpoints: string[] }>('POST', `/events/${encodeURIComponent(event.id)}/redeliver`, {});
        status.replaceChildren(
          notice('ok', `${event.id} is sent again to ${r.endpoints.length} endpoint${r.endpoints.length === 1 ? '' : 's'}.`),
        );
        await log.refresh();
      } catch (err) {
        status.replaceChildren(errorNotice(err));
      }
      all.focus();
    });
    c.main.append(h('div', { class: 'row-actions' }, all));
  }
  c.main.append(
    status,
    log.el,
    h('h2', {}, 'Payload, as sent'),
    h(
      'div',
      { class: 'table-wrap', role: 'region', 'aria-label': 'Payload', tabindex: 0 },
      h('pre', { class: 'payload' }, JSON.stringify(event, null, 2)),
    ),
  );
  await log.refresh();
}
