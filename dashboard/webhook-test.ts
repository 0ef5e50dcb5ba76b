// D-129: "Send test event" on an endpoint's page: a synthetic, signed event of a chosen type sent to this
// endpoint alone (optionally twice with one webhook-id, two out of order, or later), so that a team
// proves its receiver without real traffic; the delivery log below shows how it went.
import { api } from './api.ts';
import { clearFieldErrors, field, h, notice, showRefusal } from './dom.ts';
import { WEBHOOK_EVENT_TYPES } from '../src/contract/webhook-event-types.ts';
import type { WebhookEndpoint } from './types.ts';

export function testEventForm(e: WebhookEndpoint, status: HTMLElement, sent: () => Promise<void>): HTMLFormElement {
  const type = h('select', { id: 'wh-test-type' }, ...WEBHOOK_EVENT_TYPES.map((t) => h('option', { value: t }, t)));
  const duplicate = h('input', { type: 'checkbox', id: 'wh-test-duplicate' });
  const outOfOrder = h('input', { type: 'checkbox', id: 'wh-test-out-of-order' });
  const delay = h('input', { type: 'number', id: 'wh-test-delay', min: 0, max: 3600, step: 1, value: '0', inputmode: 'numeric' });
  const send = h('button', { type: 'submit', id: 'wh-test-send' }, 'Send test event');
  const check = (box: HTMLInputElement, label: string) => h('div', { class: 'check' }, box, h('label', { for: box.id }, label));
  const form = h(
    'form',
    { class: 'settings', 'aria-label': 'Send a test event', novalidate: true },
    h('p', {}, 'A made-up event of this type, signed as every delivery is, with "test": true; only this endpoint gets it.'),
    field('Event type', type),
    check(duplicate, 'Send it twice, with one webhook-id (your receiver should handle it once)'),
    check(outOfOrder, 'Two events about one resource, the later one delivered first'),
    field('Delay, in seconds', delay, 'From 0 to 3600.'),
    send,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearFieldErrors(form);
    status.replaceChildren();
    const body: Record<string, unknown> = { type: type.value, duplicate: duplicate.checked, out_of_order: outOfOrder.checked };
    // A number, or the text as typed: the server's refusal then names the field.
    if (delay.value.trim() !== '') body.delay_s = /^\d+$/.test(delay.value.trim()) ? Number(delay.value) : delay.value;
    try {
      const r = await api<{ event_ids: string[] }>('POST', `/webhook_endpoints/${encodeURIComponent(e.id)}/test`, body);
      status.append(notice('ok', `Test event ${r.event_ids.join(' and ')} is on its way; Refresh the log to see how it went.`));
      await sent();
      send.focus();
    } catch (err) {
      showRefusal(status, err, { type, delay_s: delay }, send);
    }
  });
  return form;
}
