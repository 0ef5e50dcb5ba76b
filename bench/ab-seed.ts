// Seeds one side of `npm run bench -- --ab` with that side's own code (its store, its fixtures), so that a
// commit whose data format differs still reads what it is given:
// `node --import tsx bench/ab-seed.ts <dir> <conversations> <out.json>`. Copied into the other checkout by bench/ab.ts.
import fs from 'node:fs/promises';
import path from 'node:path';
import { benchFixtures, seed, STREAM_APP } from './data.ts';

const [dir, countText, out] = process.argv.slice(2);
const fixtures = await benchFixtures(path.join(dir!, 'fixtures'));
const dataDir = path.join(dir!, 'data');
const ids = await seed(dataDir, 'app_demo', Number(countText));
const streamIds = await seed(dataDir, STREAM_APP, 300);
await fs.writeFile(out!, JSON.stringify({ fixtures, dataDir, ids, streamIds }));
