// Members (D-72): the team's members; an admin adds one (an invitation shown once, in a dialog, D-98),
// changes a role and removes a member, each after a confirmation that names them (D-155).
import { api } from './api.ts';
import { confirmDialog, openDialog } from './dialog.ts';
import { clearFieldErrors, errorNotice, field, h, notice, showRefusal, table, when } from './dom.ts';
import type { PageContext } from './main.ts';
import type { List, Member, MemberAdded } from './types.ts';

export async function membersPage(c: PageContext): Promise<void> {
  const { main } = c;
  const status = h('div', { class: 'status' });
  const listArea = h('div', {});
  const fail = (err: unknown) => status.replaceChildren(errorNotice(err));
  const refresh = async () => {
    const list = await api<List<Member>>('GET', '/members');
    const rows = list.data.map((m) => {
      const self = m.id === c.session.member.id;
      const role = h(
        'select',
        { id: `role-${m.id}`, disabled: !c.canWrite, 'aria-label': `Role of ${m.email}` },
        h('option', { value: 'admin', selected: m.role === 'admin' }, 'admin'),
        h('option', { value: 'viewer', selected: m.role === 'viewer' }, 'viewer'),
      );
      role.addEventListener('change', () => changeRole(m, role));
      const actions = h('div', { class: 'row-actions' });
      if (c.canWrite && !self)
        actions.append(
          h(
            'button',
            { type: 'button', class: 'danger', onclick: (e: Event) => remove(m, e.currentTarget as Element) },
            'Remove',
            h('span', { class: 'visually-hidden' }, ` ${m.email}`),
          ),
        );
      return [
        h('span', {}, m.email + (self ? ' (you)' : '')),
        h('span', {}, m.name ?? '—'),
        role,
        h('span', {}, m.password_set ? when(m.last_sign_in_at) : 'invited, no password yet'),
        actions,
      ];
    });
    listArea.replaceChildren(table(['Email', 'Name', 'Role', 'Last sign-in', 'Actions'], rows, 'Members'));
  };
  // D-155: a change of privilege is asked first, as a removal is; the select shows the old role until it is made.
  const changeRole = (m: Member, select: HTMLSelectElement) => {
    const wanted = select.value as Member['role'];
    select.value = m.role;
    confirmDialog(
      `Make ${m.email} ${wanted === 'admin' ? 'an admin' : 'a viewer'}?`,
      wanted === 'admin'
        ? `${m.email} becomes an admin: they can make and revoke keys, change apps and webhooks, and add and remove members.`
        : `${m.email} becomes a viewer: they keep reading the team's pages and can no longer change anything.`,
      `Make ${m.email} ${wanted}`,
      {
        act: () => api('PATCH', `/members/${encodeURIComponent(m.id)}`, { role: wanted }).then(() => {}),
        done: async () => {
          status.replaceChildren(notice('ok', `${m.email} is now ${wanted}.`));
          await refresh();
          document.getElementById(`role-${m.id}`)?.focus();
        },
        fail,
      },
      select,
    );
  };
  const remove = (m: Member, opener: Element) =>
    confirmDialog(
      `Remove ${m.email}?`,
      `${m.email} loses access at once: their sessions end and their personal access tokens are revoked.`,
      `Remove ${m.email}`,
      {
        act: () => api('DELETE', `/members/${encodeURIComponent(m.id)}`).then(() => {}),
        done: async () => {
          status.replaceChildren(notice('ok', `${m.email} removed.`));
          await refresh();
          // The row and its button are gone: focus goes to the form that adds members (D-99).
          (document.getElementById('member-email') ?? document.querySelector<HTMLElement>('main h1'))?.focus();
        },
        fail,
      },
      opener,
    );
  if (c.canWrite) {
    const email = h('input', { type: 'email', id: 'member-email', required: true, autocomplete: 'off' });
    const role = h('select', { id: 'member-role' }, h('option', { value: 'viewer' }, 'viewer'), h('option', { value: 'admin' }, 'admin'));
    const add = h('button', { type: 'submit', class: 'primary', id: 'member-add' }, 'Add member');
    const form = h(
      'form',
      { class: 'inline-form', 'aria-label': 'Add a member', novalidate: true },
      field('Email', email),
      field('Role', role),
      add,
    );
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      status.replaceChildren();
      clearFieldErrors(form);
      try {
        const added = await api<MemberAdded>('POST', '/members', { email: email.value.trim(), role: role.value });
        email.value = '';
        await refresh();
        if (added.invite) {
          const token = h('input', { type: 'text', readonly: true, id: 'invite-token', value: added.invite.token, class: 'secret' });
          // D-72, D-98: the token rides in the link's fragment, which no server receives; the page that
          // opens it takes it out of the URL at once.
          const link = h('input', { type: 'text', readonly: true, id: 'invite-link', value: added.invite.accept_url, class: 'secret' });
          openDialog(
            `Invitation for ${added.email}`,
            [
              h(
                'p',
                { class: 'notice warning' },
                `Pass this one-time link to ${added.email} yourself (Parley sends no mail). It is shown only now, and works once, until ${when(added.invite.expires_at)}: opening it, they choose a password and are signed in. The token alone works from “I have an invitation” on the sign-in page.`,
              ),
              h('div', { class: 'field' }, h('label', { for: 'invite-link' }, 'Invitation link'), link),
              h('div', { class: 'field' }, h('label', { for: 'invite-token' }, 'Invitation token'), token),
            ],
            (dlg) => [h('button', { type: 'button', onclick: () => dlg.close() }, 'Done')],
            add,
          );
        } else status.append(notice('ok', `${added.email} added.`));
      } catch (err) {
        showRefusal(status, err, { email, role }, add);
      }
    });
    main.append(h('h2', {}, 'Add a member'), form);
  }
  main.append(status, h('h2', {}, 'Members'), listArea);
  await refresh();
}
