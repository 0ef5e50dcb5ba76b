// data_spec patches in the CLI: a readable summary of the form being built (its title, button and
// description, then one line per field), wrapped at words in the chat, never JSON cut with "…".
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { main } from '../cli/main.ts';
import { patchLines, wrapWords } from '../cli/form-summary.ts';
import { startTestServer, type TestServer } from './support/helpers.ts';
import { cliEnv, runCli, serverEnv } from './support/cli-helpers.ts';
import { Screen } from './support/screen.ts';

const CONTACT_DESCRIPTION = 'Leave your details and a member of the team gets back to you within one business day.';

describe('patchLines', () => {
  test('the form, then each field: label, type, options, required', () => {
    const form = { title: 'Contact us', description: CONTACT_DESCRIPTION, fields: [], submit_label: 'Send' };
    assert.deepEqual(patchLines({ type: 'patch', patch: { op: 'add', path: '/form', value: form } }), [
      `◆ form "Contact us" (button: Send): ${CONTACT_DESCRIPTION}`,
    ]);
    const topic = { name: 'topic', label: 'Topic', type: 'select', required: true, options: ['Product', 'Support'] };
    assert.deepEqual(patchLines({ type: 'patch', patch: { op: 'add', path: '/form/fields/-', value: topic } }), [
      '  • Topic (select: Product, Support; required)',
    ]);
    const phone = { name: 'phone', label: 'Phone\nnumber', type: 'tel', required: false };
    assert.deepEqual(patchLines({ type: 'patch', patch: { op: 'replace', path: '/form/fields/2', value: phone } }), [
      '  • Phone number (tel) replaces field 3',
    ]);
    // A whole form in one patch: every field shows.
    assert.deepEqual(patchLines({ patch: { op: 'add', path: '/form', value: { title: 'T', fields: [topic] } } }), [
      '◆ form "T"',
      '  • Topic (select: Product, Support; required)',
    ]);
  });

  test('another patch is named by op and path, its value readable', () => {
    assert.deepEqual(patchLines({ patch: { op: 'replace', path: '/form/title', value: 'New title' } }), [
      '◆ data_spec replace /form/title "New title"',
    ]);
    assert.deepEqual(patchLines({ patch: { op: 'remove', path: '/form/fields/0' } }), ['◆ data_spec remove /form/fields/0']);
    assert.deepEqual(patchLines({ patch: { op: 'add', path: '/x', value: [1, { a: 'b' }] } }), ['◆ data_spec add /x [1, {a: "b"}]']);
    assert.deepEqual(patchLines(null), ['◆ data_spec ? ?']);
  });

  test('wrapWords breaks at spaces, indents what follows, keeps a long word whole', () => {
    assert.deepEqual(wrapWords('  • one two three four', 12), ['  • one two', '    three', '    four']);
    assert.deepEqual(wrapWords('◆ form supercalifragilistic x', 10), ['◆ form', '  supercalifragilistic', '  x']);
  });
});

describe('a form in a reply', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer();
  });
  after(() => s.close());

  test('parley send: one readable line per patch', async () => {
    const env = serverEnv(s.baseUrl, 'app_genui');
    const id = JSON.parse((await runCli(['conversations', 'create', '--json'], { env })).stdout).id;
    const r = await runCli(['send', id, 'I want to contact sales', '--stream'], { env });
    assert.equal(r.code, 0, r.stderr);
    const form = r.stderr.split('\n').filter((l) => l.startsWith('◆') || l.startsWith('  •'));
    assert.deepEqual(form, [
      `◆ form "Contact us" (button: Send): ${CONTACT_DESCRIPTION}`,
      '  • Full name (text; required)',
      '  • Email (email; required)',
      '  • Phone (tel)',
      '  • How can we help? (textarea; required)',
    ]);
  });

  test('parley chat at a terminal: the summary is wrapped at words to the screen', async () => {
    const stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => undefined });
    // One screen for both streams, as a terminal shows them.
    const screen = Object.assign(new Screen(50), { isTTY: true });
    const run = main(['chat'], {
      env: cliEnv(serverEnv(s.baseUrl, 'app_genui')),
      stdin,
      stdout: screen,
      stderr: screen,
      signals: new EventEmitter(),
    });
    await until(() => screen.text().endsWith('>>>'), 'the prompt', screen);
    stdin.emit('data', Buffer.from('I want to contact sales\r'));
    await until(() => /How can we\s+help\?/.test(screen.text()) && screen.text().endsWith('>>>'), 'the form and the next prompt', screen);
    const rows = screen.text().split('\n');
    const start = rows.findIndex((r) => r.startsWith('◆ form'));
    assert.notEqual(start, -1, screen.text());
    const shown = rows.slice(start, rows.findIndex((r, i) => i > start && r.includes('How can we')) + 1);
    assert.deepEqual(shown, [
      '◆ form "Contact us" (button: Send): Leave your',
      '  details and a member of the team gets back to',
      '  you within one business day.',
      '  • Full name (text; required)',
      '  • Email (email; required)',
      '  • Phone (tel)',
      '  • How can we help? (textarea; required)',
    ]);
    assert.doesNotMatch(screen.text(), /…|data_spec/);
    stdin.emit('data', Buffer.from('\x04'));
    assert.equal(await run, 0);
  });
});

/** Polls `check` until it holds, for at most 30 s; a timeout shows the screen. */
async function until(check: () => boolean, what: string, screen: Screen): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the screen:\n${screen.text()}`);
    await delay(20);
  }
}
