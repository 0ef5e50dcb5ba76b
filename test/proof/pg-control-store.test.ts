// The control plane's storage on PostgreSQL (D-76…D-78): the suite of test/support/control-suite.ts, and
// a change made on one instance seen by another (test/control-store.test.ts runs the suite on files).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ControlDocT, FixturesT } from '../../src/core/control.ts';
import { PgControlPlane } from '../../src/store/pg/control.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { loadFixtures } from '../../src/store/fixtures.ts';
import { controlSuite, draft } from '../support/control-suite.ts';
import { FIXTURES_DIR } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();
/** A migrated database; each open is a control plane over its own pool (as another instance's). */
async function pgStorage() {
  const url = await freshDatabase();
  const open = async (log?: (m: string) => void) => {
    return openPg(url, await loadFixtures(FIXTURES_DIR), log);
  };
  return { url, open };
}

/** A control plane over its own pool; closing it closes the pool (so does a failed open). */
async function openPg(url: string, fixtures: FixturesT, log?: (m: string) => void, now?: () => number): Promise<PgControlPlane> {
  const store = new PgStore({ url, max: 3 });
  await store.open();
  let c: PgControlPlane;
  try {
    c = await PgControlPlane.open(store.sql, { fixtures, log, now });
  } catch (err) {
    await store.close();
    throw err;
  }
  const close = c.close.bind(c);
  c.close = async () => {
    await close();
    await store.close();
  };
  return c;
}

controlSuite('PostgreSQL', {
  async fresh() {
    const url = await freshDatabase();
    return {
      open: (fixtures, log, now) => openPg(url, fixtures, log, now),
    };
  },
});

const renameDemo = (name: string) => (d: ControlDocT) => {
  d.apps.find((a) => a.id === 'app_demo')!.name = name;
  return [draft('team_demo', 'app.updated')];
};

describe('control plane on PostgreSQL (D-78)', () => {
  test("one instance's change reaches another (NOTIFY, or its version poll) and changes made at once on two instances both land", async () => {
    const db = await pgStorage();
    const a = await db.open();
    const b = await db.open();
    try {
      const seen = new Promise<ControlDocT>((resolve) => b.onChange(resolve));
      await a.apply(renameDemo('From A'));
      assert.equal((await seen).apps.find((x) => x.id === 'app_demo')!.name, 'From A');
      // Each change derives from the locked row, not from the instance's copy: neither is lost.
      await Promise.all([
        a.apply((d) => {
          d.apps.find((x) => x.id === 'app_demo')!.stream = true;
          return [];
        }),
        b.apply((d) => {
          d.apps.find((x) => x.id === 'app_demo')!.generative_ui = true;
          return [];
        }),
      ]);
      await b.refresh();
      const app = b.read().apps.find((x) => x.id === 'app_demo')!;
      assert.deepEqual([app.name, app.stream, app.generative_ui, b.read().version], ['From A', true, true, 4]);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
