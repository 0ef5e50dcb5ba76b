// D-49's signing secret of visitor tokens in the data directory (`widget-secret`), when no
// PARLEY_WIDGET_SECRET is set. PostgreSQL's twin is src/store/pg/widget-secret.ts.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { withFile } from '../../core/errors.ts';

/** `<data dir>/widget-secret`, made on first start (32 random bytes, readable by the owner only) so tokens outlive a restart. */
export async function loadWidgetSecret(dataDir: string): Promise<Buffer> {
  const file = path.join(dataDir, 'widget-secret');
  await fs.mkdir(dataDir, { recursive: true });
  try {
    await fs.writeFile(file, `${randomBytes(32).toString('hex')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
      // A write that failed (a full disk) must not leave an empty secret for the next start to refuse.
      await fs.rm(file, { force: true }).catch(() => {});
      throw withFile(err, file);
    }
  }
  const text = (await fs.readFile(file, 'utf8')).trim();
  if (text.length < 32) throw new Error(`${file}: the widget secret must be at least 32 characters`);
  return Buffer.from(text, 'utf8');
}
