// The dashboard's one way to make elements (D-97): text is always appended as text nodes, never parsed
// as markup, so that a conversation's content, a key's name or an audit entry can never run.
import { ApiFailure } from './api.ts';
type Child = Node | string | number | null | undefined | false;
type Props = Record<string, unknown>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v as EventListener);
    else if (k === 'class') el.className = String(v);
    else if (k === 'value' && 'value' in el) (el as HTMLInputElement).value = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'number' ? String(c) : c);
  return el;
}

/** Unix seconds as a UTC date and time, or a dash. */
export function when(ts: number | null | undefined): string {
  if (ts === null || ts === undefined) return '—';
  return `${new Date(ts * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

let ids = 0;
export const uid = (p: string) => `${p}-${++ids}`;

/** A labelled field: the label's `for` names the control, so that every control has an accessible name. */
export function field(label: string, control: HTMLInputElement | HTMLSelectElement, hint?: string): HTMLElement {
  control.id ||= uid('f');
  const hintEl = hint ? h('span', { class: 'hint', id: `${control.id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintEl);
}

export function table(headers: string[], rows: Node[][], caption: string): HTMLElement {
  return h(
    'div',
    { class: 'table-wrap', role: 'region', 'aria-label': caption, tabindex: 0 },
    h(
      'table',
      {},
      h('caption', { class: 'visually-hidden' }, caption),
      h('thead', {}, h('tr', {}, ...headers.map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c) => h('td', {}, c))))),
    ),
  );
}

export const text = (s: unknown) => document.createTextNode(s === null || s === undefined ? '—' : String(s));

/** A status line that screen readers announce (errors use role=alert). */
export function notice(kind: 'error' | 'ok', message: string): HTMLElement {
  return h('p', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, message);
}

/** A failure as every page says it: a refusal's field first when it names one (D-1's `param`), then its message. */
export function errorNotice(err: unknown): HTMLElement {
  if (!(err instanceof Error)) return notice('error', String(err));
  return notice('error', err instanceof ApiFailure && err.param ? `${err.param}: ${err.message}` : err.message);
}

/**
 * A form's refusal: its notice in `status`, and the field it names (D-1's `param`, or the nearest field
 * its path is in: `agent.model`, `events` for `events.0`) marked invalid and focused; else `fallback`.
 */
export function showRefusal(status: HTMLElement, err: unknown, fields: Record<string, HTMLElement>, fallback?: HTMLElement): void {
  status.append(errorNotice(err));
  const parts = (err instanceof ApiFailure && err.param?.split('.')) || [];
  let target: HTMLElement | undefined;
  for (let n = parts.length; n > 0 && !target; n--) target = fields[parts.slice(0, n).join('.')];
  target?.setAttribute('aria-invalid', 'true');
  (target ?? fallback)?.focus();
}
