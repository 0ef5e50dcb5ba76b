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

/** Unix seconds to the second (webhook attempts a few seconds apart must read apart). */
export function whenToSecond(ts: number | null | undefined): string {
  if (ts === null || ts === undefined) return '—';
  return `${new Date(ts * 1000).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
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

/**
 * A table in its own scrolling region (never the page's, D-99). `cards`: below 40rem each row is drawn as
 * a card, each cell under its column's name (`data-label`), so that no column is out of view.
 */
export function table(headers: string[], rows: Node[][], caption: string, layout?: 'cards'): HTMLElement {
  return h(
    'div',
    { class: `table-wrap${layout ? ` ${layout}` : ''}`, role: 'region', 'aria-label': caption, tabindex: 0 },
    h(
      'table',
      {},
      h('caption', { class: 'visually-hidden' }, caption),
      h('thead', {}, h('tr', {}, ...headers.map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((c, i) => h('td', { 'data-label': headers[i] }, c))))),
    ),
  );
}

export const text = (s: unknown) => document.createTextNode(s === null || s === undefined ? '—' : String(s));

/** A status line that screen readers announce (errors use role=alert). */
export function notice(kind: 'error' | 'ok', message: string): HTMLElement {
  return h('p', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, message);
}

/** A refusal's message without its field's name in front, when the server put it there (`agent.model: must be …`). */
function bareMessage(err: ApiFailure): string {
  return err.param && err.message.startsWith(`${err.param}: `) ? err.message.slice(err.param.length + 2) : err.message;
}

/** A failure as every page says it: a refusal's field named once when it names one (D-1's `param`), then its message. */
export function errorNotice(err: unknown): HTMLElement {
  if (!(err instanceof Error)) return notice('error', String(err));
  return notice('error', err instanceof ApiFailure && err.param ? `${err.param}: ${bareMessage(err)}` : err.message);
}

/**
 * D-154: a form's error at its field: the message right after the field (its label names it, so the
 * message does not), joined to the control's `aria-describedby`, the control `aria-invalid` and focused,
 * so that it is read on focus and seen beside the field, never below the fold.
 */
export function fieldError(control: HTMLElement, message: string): void {
  control.id ||= uid('f');
  const id = `${control.id}-error`;
  document.getElementById(id)?.remove();
  // An alert too: focus may already be on the field (Enter pressed in it), when nothing new would be read.
  const el = h('p', { class: 'field-error', id, role: 'alert' }, message);
  // Right under the control, above its hint; a checkbox's after its label; a checkbox of a group (the
  // events) is refused for the group, so its message goes under the fieldset.
  const holder = control.closest('fieldset.events') ?? control.closest('.check');
  if (holder) holder.append(el);
  else control.after(el);
  const described = (control.getAttribute('aria-describedby') ?? '').split(' ').filter((t) => t && t !== id);
  control.setAttribute('aria-describedby', [...described, id].join(' '));
  control.setAttribute('aria-invalid', 'true');
  control.focus();
}

/** Takes a form's field errors away (before it is sent again). */
export function clearFieldErrors(form: HTMLElement): void {
  for (const el of form.querySelectorAll('.field-error')) {
    const control = form.querySelector(`[aria-describedby~="${el.id}"]`);
    if (control) {
      const rest = (control.getAttribute('aria-describedby') ?? '').split(' ').filter((t) => t && t !== el.id);
      if (rest.length) control.setAttribute('aria-describedby', rest.join(' '));
      else control.removeAttribute('aria-describedby');
    }
    el.remove();
  }
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
}

/**
 * A form's refusal: at the field it names (D-1's `param`, or the nearest field its path is in:
 * `agent.model`, `events` for `events.0`), by `fieldError`; a refusal of no field of the form goes to
 * `status`, and focus to `fallback`.
 */
export function showRefusal(status: HTMLElement, err: unknown, fields: Record<string, HTMLElement>, fallback?: HTMLElement): void {
  const parts = (err instanceof ApiFailure && err.param?.split('.')) || [];
  let target: HTMLElement | undefined;
  for (let n = parts.length; n > 0 && !target; n--) target = fields[parts.slice(0, n).join('.')];
  if (target && err instanceof ApiFailure) fieldError(target, bareMessage(err));
  else {
    status.append(errorNotice(err));
    fallback?.focus();
  }
}
