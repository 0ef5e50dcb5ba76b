// A child process for test/proof/control-crash.test.ts: opens the file store's control plane of the
// data directory given as argv[2] and changes it without pause, each change renaming the demo app to
// `v<version>` with one audit entry; after each change is durable it writes `acked <version>` on stdout.
// The parent kills it with SIGKILL at a moment of its choosing.
import { FileControlPlane } from '../../src/store/file/control.ts';
import { loadFixtures } from '../../src/store/fixtures.ts';
import { draft } from './control-suite.ts';
import { FIXTURES_DIR } from './helpers.ts';

const control = await FileControlPlane.open(process.argv[2]!, { fixtures: await loadFixtures(FIXTURES_DIR) });
process.stdout.write(`ready ${control.read().version}\n`);
for (;;) {
  const doc = await control.apply((d) => {
    d.apps.find((a) => a.id === 'app_demo')!.name = `v${d.version + 1}`;
    return [draft('team_demo', 'test.renamed', { target: { type: 'app', id: 'app_demo' } })];
  });
  process.stdout.write(`acked ${doc.version}\n`);
}
