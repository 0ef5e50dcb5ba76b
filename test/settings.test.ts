// The settings' table (src/settings.ts): each row is read the same way (its flag, else its variable,
// else its default; an empty variable counts as unset) and is listed by --help. The README's table is
// drawn from it too; test/docs.test.ts fails when the committed README differs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULTS, loadConfig, settingsTable, USAGE } from '../src/config.ts';
import { SETTINGS, type Setting } from '../src/settings.ts';

const rows = Object.entries(SETTINGS) as Array<[keyof typeof SETTINGS, Setting<unknown, string | null>]>;
const valueFlag = (s: Setting<unknown, string | null>) => s.flag?.split(' ')[0];

describe('the settings table', () => {
  test('an empty variable counts as unset, and a default given as the variable reads as the default', () => {
    for (const [key, s] of rows) {
      if (!s.env) continue;
      assert.deepEqual(loadConfig([], { [s.env]: '' })[key], DEFAULTS[key], `${s.env}=`);
      if (s.default !== null) assert.deepEqual(loadConfig([], { [s.env]: s.default })[key], DEFAULTS[key], s.env);
    }
  });

  test('a flag wins over its variable, which is then not read', () => {
    for (const [key, s] of rows) {
      if (!s.env || !s.flag || s.default === null || s.switched !== undefined) continue;
      // A variable that would be refused, or taken as is, if it were read.
      const c = loadConfig([valueFlag(s)!, s.default], { [s.env]: '\u0000not this' });
      assert.deepEqual(c[key], DEFAULTS[key], s.flag);
    }
    assert.equal(loadConfig(['--webhook-allow-private'], { WEBHOOK_ALLOW_PRIVATE: '0' }).webhookAllowPrivate, true);
    assert.equal(loadConfig(['--no-playground'], {}).playground, false);
  });

  test('--help lists every setting with its variable and default; the README table has a row for each', () => {
    for (const [, s] of rows) {
      const head = s.flag ?? s.env!;
      const at = USAGE.indexOf(`\n  ${head} `);
      assert.ok(at >= 0, head);
      const rest = USAGE.slice(at + 1);
      const entry = rest.slice(0, rest.search(/\n( {2}\S|$)/)).replace(/\s+/g, ' ');
      if (s.flag && s.env) assert.ok(entry.includes(`[${s.env}`), `${head}: ${entry}`);
      if (s.default !== null && s.shown === undefined) assert.ok(entry.includes(`(default ${s.default})`), `${head}: ${entry}`);
      assert.equal(
        settingsTable()
          .split('\n')
          .filter((line) => line.includes(`\`${head}\``)).length,
        1,
        head,
      );
    }
  });
});
