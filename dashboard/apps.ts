// Apps (D-71): the team's apps, and a settings form per app saved with PATCH /apps/:id (only what
// changed is sent); a refusal names its field (D-1's `param`), shown beside that field, which gets focus.
import { api } from './api.ts';
import { clearFieldErrors, field, h, notice, showRefusal, table } from './dom.ts';
import type { PageContext } from './main.ts';
import type { AdminApp, Balance, List } from './types.ts';

const yes = (b: boolean) => (b ? 'yes' : 'no');

export async function appsPage(c: PageContext): Promise<void> {
  const list = await api<List<AdminApp>>('GET', '/apps');
  const rows = list.data.map((a) => [
    h('a', { href: `#/app/${encodeURIComponent(a.id)}` }, a.name),
    h('code', {}, a.id),
    h('span', {}, a.active ? 'Active' : 'Inactive'),
    h('span', {}, yes(a.stream)),
    h('span', {}, yes(a.generative_ui)),
    h('span', {}, a.plan),
    h('span', {}, a.agent.model),
    h('span', {}, a.widget ? `${a.widget.origins.length} origin${a.widget.origins.length === 1 ? '' : 's'}` : 'none'),
  ]);
  c.main.append(
    rows.length
      ? table(['App', 'Id', 'State', 'Streams by default', 'Generative UI', 'Plan', 'Model', 'Widget'], rows, 'Apps')
      : h('p', {}, 'No apps yet.'),
  );
}

function checkbox(id: string, checked: boolean, disabled: boolean): HTMLInputElement {
  return h('input', { type: 'checkbox', id, checked, disabled });
}

function check(label: string, box: HTMLInputElement): HTMLElement {
  return h('div', { class: 'check' }, box, h('label', { for: box.id }, label));
}

export async function appPage(c: PageContext): Promise<void> {
  const [id = ''] = c.rest;
  const path = `/apps/${encodeURIComponent(id)}`;
  const [app, balance] = await Promise.all([api<AdminApp>('GET', path), api<Balance>('GET', '/credits').catch(() => null)]);
  document.querySelector('main h1')!.textContent = app.name;
  const ro = !c.canWrite;
  const name = h('input', { type: 'text', id: 'app-name', value: app.name, disabled: ro, required: true });
  const active = checkbox('app-active', app.active, ro);
  const stream = checkbox('app-stream', app.stream, ro);
  const genui = checkbox('app-genui', app.generative_ui, ro);
  const plan = h(
    'select',
    { id: 'app-plan', disabled: ro },
    ...[...new Set([app.plan, ...(balance?.plans.map((p) => p.plan) ?? [])])].map((p) =>
      h('option', { value: p, selected: p === app.plan }, p),
    ),
  );
  const agentActive = checkbox('app-agent-active', app.agent.active, ro);
  const agentName = h('input', { type: 'text', id: 'app-agent-name', value: app.agent.name, disabled: ro });
  const model = h('input', { type: 'text', id: 'app-agent-model', value: app.agent.model, disabled: ro });
  const kb = h('input', { type: 'text', id: 'app-agent-kb', value: app.agent.knowledge_base ?? '', disabled: ro });
  const origins = h('textarea', { id: 'app-origins', rows: 3, disabled: ro || !app.widget }, (app.widget?.origins ?? []).join('\n'));
  const secret = h('input', { type: 'password', id: 'app-secret', autocomplete: 'new-password', disabled: ro || !app.widget });
  const byParam: Record<string, HTMLElement> = {
    name,
    active,
    stream,
    generative_ui: genui,
    plan,
    'agent.active': agentActive,
    'agent.name': agentName,
    'agent.model': model,
    'agent.knowledge_base': kb,
    'widget.origins': origins,
    'widget.identity_secret': secret,
  };
  const status = h('div', { class: 'status' });
  const save = h('button', { type: 'submit', class: 'primary', id: 'app-save' }, 'Save changes');
  const originsField = h(
    'div',
    { class: 'field' },
    h('label', { for: 'app-origins' }, 'Widget origins, one a line'),
    origins,
    h(
      'span',
      { class: 'hint', id: 'app-origins-hint' },
      app.widget ? 'Such as https://shop.example (no path).' : 'This app has no widget.',
    ),
  );
  origins.setAttribute('aria-describedby', 'app-origins-hint');
  const form = h(
    'form',
    { class: 'settings', 'aria-label': `Settings of ${app.name}`, novalidate: true },
    h('p', {}, 'Id ', h('code', {}, app.id)),
    field('Name', name),
    check('Active (an inactive app refuses every request)', active),
    check('Streams by default', stream),
    check('Generative UI (forms)', genui),
    field('Plan', plan),
    h(
      'fieldset',
      {},
      h('legend', {}, 'Agent'),
      check('Agent active', agentActive),
      field('Agent name', agentName),
      field('Model', model, 'local, or ollama:<model>'),
      field('Knowledge base', kb, 'A folder of the fixtures’ knowledge/, or empty for none'),
    ),
    h(
      'fieldset',
      {},
      h('legend', {}, 'Widget'),
      originsField,
      field(
        'New identity secret',
        secret,
        app.widget?.identity_secret_set
          ? `Set (${app.widget.identity_secret_redacted ?? 'hidden'}); leave empty to keep it.`
          : 'Not set; 32 to 256 characters.',
      ),
    ),
    status,
    c.canWrite ? save : h('p', {}, 'You are a viewer: apps are changed by the team’s admins.'),
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearFieldErrors(form);
    status.replaceChildren();
    const change: Record<string, unknown> = {};
    if (name.value !== app.name) change.name = name.value;
    if (active.checked !== app.active) change.active = active.checked;
    if (stream.checked !== app.stream) change.stream = stream.checked;
    if (genui.checked !== app.generative_ui) change.generative_ui = genui.checked;
    if (plan.value !== app.plan) change.plan = plan.value;
    const agent: Record<string, unknown> = {};
    if (agentActive.checked !== app.agent.active) agent.active = agentActive.checked;
    if (agentName.value !== app.agent.name) agent.name = agentName.value;
    if (model.value !== app.agent.model) agent.model = model.value;
    if ((kb.value.trim() || null) !== app.agent.knowledge_base) agent.knowledge_base = kb.value.trim() || null;
    if (Object.keys(agent).length) change.agent = agent;
    if (app.widget) {
      const widget: Record<string, unknown> = {};
      const list = origins.value
        .split('\n')
        .map((s) => s.trim())
        .filter(Boolean);
      if (list.join('\n') !== app.widget.origins.join('\n')) widget.origins = list;
      if (secret.value) widget.identity_secret = secret.value;
      if (Object.keys(widget).length) change.widget = widget;
    }
    if (Object.keys(change).length === 0) return void status.append(notice('ok', 'Nothing changed.'));
    try {
      Object.assign(app, await api<AdminApp>('PATCH', path, change));
      secret.value = '';
      status.append(notice('ok', 'Saved. The next request to the app uses these settings.'));
      save.focus();
    } catch (err) {
      showRefusal(status, err, byParam);
    }
  });
  c.main.append(h('p', {}, h('a', { href: '#/apps' }, 'Back to the apps')), form);
}

/** The team's apps for a chooser, or null when this admin surface has no `GET /apps` (D-95). */
export async function teamApps(): Promise<{ id: string; name: string }[] | null> {
  return api<List<AdminApp>>('GET', '/apps').then(
    (l) => l.data.map((a) => ({ id: a.id, name: a.name })),
    () => null,
  );
}

/** A chooser of the team's apps (a text field when they cannot be listed); `all` adds an empty "all apps" choice. */
export function appChooser(
  id: string,
  apps: { id: string; name: string }[] | null,
  selected: string,
  all?: string,
): HTMLSelectElement | HTMLInputElement {
  if (!apps) return h('input', { type: 'text', id, value: selected, autocomplete: 'off' });
  return h(
    'select',
    { id },
    all === undefined ? null : h('option', { value: '', selected: selected === '' }, all),
    ...apps.map((a) => h('option', { value: a.id, selected: a.id === selected }, `${a.name} (${a.id})`)),
  );
}
