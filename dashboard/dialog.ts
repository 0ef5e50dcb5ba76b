// Modal dialogs on the native <dialog> (focus kept inside, Escape closes); on close the dialog leaves
// the DOM (a key shown in it goes with it, D-98) and focus returns to what opened it, or to the page's
// heading when that is gone (a list redrawn after a change).
import { h } from './dom.ts';

export interface DialogHandle {
  el: HTMLDialogElement;
  close(): void;
  /** Closes it and resolves once it is gone and focus is back (the close event comes in a later task). */
  closed(): Promise<void>;
}

export function openDialog(
  title: string,
  body: Node[],
  actions: (d: DialogHandle) => HTMLElement[],
  opener?: Element | null,
): DialogHandle {
  const titleId = `dlg-${Date.now()}`;
  const el = h('dialog', { 'aria-labelledby': titleId, class: 'dialog' });
  let gone: () => void = () => {};
  const done = new Promise<void>((r) => {
    gone = r;
  });
  const handle: DialogHandle = {
    el,
    close: () => el.close(),
    closed: () => {
      el.close();
      return done;
    },
  };
  el.append(h('h2', { id: titleId }, title), ...body, h('div', { class: 'actions' }, ...actions(handle)));
  el.addEventListener('close', () => {
    el.remove();
    const back = opener instanceof HTMLElement && opener.isConnected ? opener : document.querySelector<HTMLElement>('main h1');
    back?.focus();
    gone();
  });
  document.body.append(el);
  // The browser gives focus back, on close, to what had it before showModal: let that be the opener
  // (a dialog opened by pressing Enter in a field would otherwise give it back to the field).
  if (opener instanceof HTMLElement) opener.focus();
  el.showModal();
  return handle;
}

/**
 * A dialog that asks before a request (a revoke, a restore, a roll): `label` runs `act` (the request),
 * closes the dialog, then runs `done` with what `act` answered (the page redrawn, focus placed) once the
 * dialog is gone; a failure of either closes it and goes to `fail`. The button is `danger` unless `kind` says;
 * a `danger` one opens with focus on Cancel (D-155), so that Enter, Enter never revokes or removes; `cancelled`
 * runs when it closes without acting.
 */
export function confirmDialog<T = void>(
  title: string,
  body: string | Node[],
  label: string,
  o: {
    act: () => Promise<T>;
    done: (answer: T) => Promise<void> | void;
    fail: (err: unknown) => void;
    kind?: 'danger' | 'primary';
    cancelled?: () => void;
  },
  opener: Element,
): DialogHandle {
  const danger = (o.kind ?? 'danger') === 'danger';
  let acted = false;
  const dialog = openDialog(
    title,
    typeof body === 'string' ? [h('p', {}, body)] : body,
    (dlg) => [
      h(
        'button',
        {
          type: 'button',
          class: o.kind ?? 'danger',
          onclick: async () => {
            acted = true;
            // `done` runs once the dialog has given focus back, so that the focus it places stays.
            try {
              const answer = await o.act();
              await dlg.closed();
              await o.done(answer);
            } catch (err) {
              await dlg.closed();
              o.fail(err);
            }
          },
        },
        label,
      ),
      // showModal focuses the dialog's `autofocus` control, else its first one (the action).
      h('button', { type: 'button', autofocus: danger, onclick: () => dlg.close() }, 'Cancel'),
    ],
    opener,
  );
  dialog.el.addEventListener('close', () => {
    if (!acted) o.cancelled?.();
  });
  return dialog;
}
