// The playground (docs/widget.md, D-58): pick an app, chat with its widget, and watch beside it the
// raw events of each reply (name, sequence number, time since the reply began) and the form document
// that the data_spec patches build. It uses only the widget's public mount() and its DOM events.
import type { MountedWidget } from './widget.ts';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

function start(): void {
  const pick = $<HTMLFormElement>('pick');
  const app = $<HTMLSelectElement>('app');
  const key = $<HTMLInputElement>('key');
  const events = $<HTMLTableSectionElement>('events');
  const doc = $<HTMLPreElement>('doc');
  let widget: MountedWidget | undefined;
  let t0 = 0;

  const load = () => {
    widget?.destroy();
    events.replaceChildren();
    doc.textContent = '{}';
    $('tag').textContent =
      `<script src="${location.origin}/widget.js" data-app-id="${app.value}" data-publishable-key="${key.value.trim()}" async></script>`;
    if (!app.value || !key.value.trim()) return;
    widget = window.ParleyWidget.mount({
      appId: app.value,
      publishableKey: key.value.trim(),
      baseUrl: location.origin,
      container: $('chat'),
    });
    widget.element.addEventListener('parley:event', (e) => {
      const { event, data, at } = (e as CustomEvent<{ event: string; data: { sequence_number?: number }; at: number }>).detail;
      if (event === 'response.created') t0 = at;
      const { type: _type, sequence_number, ...rest } = data as Record<string, unknown>;
      const row = document.createElement('tr');
      for (const text of [String(sequence_number ?? ''), event, (at - t0).toFixed(0), JSON.stringify(rest)]) {
        const td = document.createElement('td');
        td.textContent = text;
        row.append(td);
      }
      events.append(row);
      row.scrollIntoView({ block: 'nearest' });
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
