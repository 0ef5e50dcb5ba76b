// The playground (docs/widget.md, D-58): pick an app, chat with its widget, and watch beside it the
// raw events of each reply (name, sequence number, time since the reply began) and the form document
// that the data_spec patches build. It uses only the widget's public mount() and its DOM events.
import type { MountedWidget } from './widget.ts';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** The app last chosen, kept across reloads (D-58); storage may be blocked, and the page works without it. */
const APP_KEY = 'parley-playground:app';
const stored = {
  get: () => {
    try {
      return localStorage.getItem(APP_KEY);
    } catch {
      return null;
    }
  },
  set: (app: string) => {
    try {
      localStorage.setItem(APP_KEY, app);
    } catch {
      // Without storage the choice lasts as long as the page.
    }
  },
};

/** A cell of text; an event name may wrap after each dot only (a <wbr> there), never inside a word. */
function cell(text: string, breakAfterDots = false): HTMLTableCellElement {
  const td = document.createElement('td');
  const parts = breakAfterDots ? text.split(/(?<=\.)/) : [text];
  for (const [i, part] of parts.entries()) {
    if (i > 0) td.append(document.createElement('wbr'));
    td.append(part);
  }
  return td;
}

function start(): void {
  const pick = $<HTMLFormElement>('pick');
  const app = $<HTMLSelectElement>('app');
  const key = $<HTMLInputElement>('key');
  const scenario = $<HTMLInputElement>('scenario');
  const events = $<HTMLTableSectionElement>('events');
  const doc = $<HTMLPreElement>('doc');
  let widget: MountedWidget | undefined;
  let t0 = 0;
  const last = stored.get();
  if (last && [...app.options].some((o) => o.value === last)) app.value = last;

  const load = () => {
    widget?.destroy();
    events.replaceChildren();
    doc.textContent = '{}';
    $('tag').textContent =
      `<script src="${location.origin}/widget.js" data-app-id="${app.value}" data-publishable-key="${key.value.trim()}" async></script>`;
    if (!app.value || !key.value.trim()) return;
    stored.set(app.value);
    widget = window.ParleyWidget.mount({
      appId: app.value,
      publishableKey: key.value.trim(),
      baseUrl: location.origin,
      container: $('chat'),
      // D-120: each message's reply fails as the scenario asks (docs/scenarios.md).
      scenario: scenario.value.trim() || undefined,
    });
    widget.element.addEventListener('parley:event', (e) => {
      const { event, data, at } = (e as CustomEvent<{ event: string; data: { sequence_number?: number }; at: number }>).detail;
      if (event === 'response.created') t0 = at;
      const { type: _type, sequence_number, ...rest } = data as Record<string, unknown>;
      // The event's row, then its payload pretty-printed in a row of its own across the columns.
      const row = document.createElement('tr');
      row.className = 'event';
      row.append(cell(String(sequence_number ?? '')), cell(event, true), cell((at - t0).toFixed(0)));
      const detail = document.createElement('tr');
      detail.className = 'data';
      const payload = cell(JSON.stringify(rest, null, 2));
      payload.colSpan = 3;
      detail.append(payload);
      events.append(row, detail);
      detail.scrollIntoView({ block: 'nearest' });
    });
    widget.element.addEventListener('parley:form', (e) => {
      doc.textContent = JSON.stringify((e as CustomEvent).detail, null, 2);
    });
  };
  pick.addEventListener('submit', (e) => {
    e.preventDefault();
    load();
  });
  app.addEventListener('change', load);
  load();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start, { once: true });
else start();
