// Every file under a folder with its bytes: what shows a copy untouched (D-151: the driver's copy a
// project holds is never patched by Parley's install).
import fs from 'node:fs/promises';
import path from 'node:path';

export async function treeBytes(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const f of await fs.readdir(dir, { recursive: true, withFileTypes: true }))
    if (f.isFile()) out[path.relative(dir, path.join(f.parentPath, f.name))] = await fs.readFile(path.join(f.parentPath, f.name), 'base64');
  return out;
}
