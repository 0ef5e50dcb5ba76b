// postinstall: patches postgres.js where a connection that dies under a transaction ends the process
// (docs/reliability.md, D-90: porsager/postgres#1208, the fixes of its pull requests #1168, #1209 and
// #1215, unreleased). Both entry points are patched, ESM (src/) and CommonJS (cjs/src/). Each edit
// must match its text exactly once, and running it again on a patched copy changes nothing.
// D-151: the driver is an optional dependency pinned to the version the edits are written for, and
// only Parley's own copy is patched: the one Parley imports, if it lies in Parley's node_modules (a
// project's hoisted copy is that project's). An install never fails here: what cannot or need not be
// patched is said in one line, and start-up on PostgreSQL warns of an unpatched driver.
// Usage: node scripts/patch-postgres.mjs [postgres package folder] (a folder named is patched, or
// the reason it cannot be is an exit 1).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Parley's package folder: the one this script's folder is in. */
export const PARLEY_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The version the edits below are written for: the one package.json pins (D-151). */
export const PATCHED_VERSION = JSON.parse(fs.readFileSync(path.join(PARLEY_ROOT, 'package.json'), 'utf8')).optionalDependencies.postgres;
export const MARKER = '// Patched by parley (scripts/patch-postgres.mjs): porsager/postgres#1208';

/** The edits, by file: what is replaced (found exactly once) and by what. */
export const EDITS = {
  'connection.js': [
    {
      // A write deferred to setImmediate may find the socket closed meanwhile: the bytes have nowhere
      // to go, and what waited for them is told the connection closed (instead of an uncaught TypeError).
      find: '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)\n',
      replace:
        '  function nextWrite(fn) {\n' +
        '    if (!socket) {\n' +
        '      nextWriteTimer !== null && clearImmediate(nextWriteTimer)\n' +
        '      chunk = nextWriteTimer = null\n' +
        "      error(Errors.connection('CONNECTION_CLOSED', options))\n" +
        '      return false\n' +
        '    }\n' +
        '    const x = socket.write(chunk, fn)\n',
    },
    {
      // terminate(): a cleared timer left in nextWriteTimer stops write() from ever scheduling again
      // (every later connect then times out, CONNECT_TIMEOUT): forget it with its bytes.
      find: '    clearImmediate(nextWriteTimer)\n    if (socket) {\n',
      replace: '    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n    if (socket) {\n',
    },
    {
      // closed(): the same, for the connection's next socket.
      find: "    clearImmediate(nextWriteTimer)\n    socket.removeListener('data', data)\n",
      replace: "    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n    socket.removeListener('data', data)\n",
    },
    {
      // closed(): whatever was still sent or running is told the connection closed, whether or not the
      // socket reported an error first (a query queued between the 'error' and the 'close' would wait
      // for ever), and the next socket starts with no query, result or error of the dead one.
      find: "    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))\n",
      replace:
        "    ;(query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options))\n" +
        '    query = results = errorResponse = null\n' +
        '    result = new Result()\n',
    },
  ],
  'index.js': [
    {
      // begin(): once its connection closed, a transaction runs nothing more: its queued statements,
      // and anything its callback or its automatic rollback/commit sends later, are rejected rather
      // than sent on the connection's next session (another transaction's, after a reconnect).
      find: '    let savepoints = 0\n      , connection\n',
      replace: '    let savepoints = 0\n      , connection\n      , closedError = null\n',
    },
    {
      find: '        new Promise((_, reject) => connection.onclose = reject)\n',
      replace:
        '        new Promise((_, reject) => connection.onclose = err => {\n' +
        '          closedError = err\n' +
        '          while (queries.length)\n' +
        '            queries.shift().reject(err)\n' +
        '          reject(err)\n' +
        '        })\n',
    },
    {
      find: '        q.catch(e => uncaughtError || (uncaughtError = e))\n',
      replace:
        '        q.catch(e => uncaughtError || (uncaughtError = e))\n        if (closedError)\n          return q.reject(closedError)\n',
    },
  ],
};

const count = (text, part) => text.split(part).length - 1;

/** The patched text of one file, or the reason it cannot be patched. Already patched: returned as is. */
export function patchText(name, text) {
  const edits = EDITS[name];
  if (text.startsWith(MARKER)) {
    for (const e of edits) if (count(text, e.replace) !== 1) throw new Error(`${name} carries the patch's mark but not its edits`);
    return text;
  }
  let out = text;
  for (const e of edits) {
    const n = count(out, e.find);
    if (n !== 1) throw new Error(`${name}: the text to patch is found ${n} times, not once:\n${e.find}`);
    out = out.replace(e.find, () => e.replace);
  }
  return `${MARKER}\n${out}`;
}

/** Patches the package in `dir` (src/ and cjs/src/); returns the files changed. */
export function patchPackage(dir) {
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  if (pkg.name !== 'postgres' || pkg.version !== PATCHED_VERSION)
    throw new Error(
      `${dir} is ${pkg.name}@${pkg.version}; scripts/patch-postgres.mjs is for postgres@${PATCHED_VERSION}. ` +
        'Check whether the new version fixes porsager/postgres#1208 (then remove the patch) or port the patch.',
    );
  const changed = [];
  const planned = [];
  // Every file is checked before any is written: a failure leaves the package as it was.
  for (const sub of ['src', path.join('cjs', 'src')])
    for (const name of Object.keys(EDITS)) {
      const file = path.join(dir, sub, name);
      const text = fs.readFileSync(file, 'utf8');
      const next = patchText(name, text);
      if (next !== text) planned.push({ file, next });
    }
  for (const { file, next } of planned) {
    fs.writeFileSync(`${file}.parley-tmp`, next);
    fs.renameSync(`${file}.parley-tmp`, file);
    changed.push(file);
  }
  return changed;
}

/**
 * The folder of the `postgres` that Parley (in `root`) imports, hoisted or nested alike; null when
 * none resolves (the optional dependency was not installed).
 */
export function installedDir(root = PARLEY_ROOT) {
  let main;
  try {
    main = createRequire(path.join(root, 'package.json')).resolve('postgres');
  } catch {
    return null;
  }
  for (let dir = path.dirname(main); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file) && JSON.parse(fs.readFileSync(file, 'utf8')).name === 'postgres') return dir;
  }
  return null;
}

/** Why the copy in `dir` is not Parley's (in `root`) to patch, or null when it is. */
export function notOurs(dir, root = PARLEY_ROOT) {
  const own = path.join(fs.realpathSync(root), 'node_modules') + path.sep;
  if (!fs.realpathSync(dir).startsWith(own)) return `${dir} is not in ${own}: that copy is the project's, left as it is`;
  const { version } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  if (version !== PATCHED_VERSION) return `${dir} is postgres@${version}, not the pinned ${PATCHED_VERSION}`;
  return null;
}

/** Patches the package in `dir`, and says so in a line; throws the reason it cannot. */
function patchedLine(dir) {
  return patchPackage(dir).length > 0
    ? `patched postgres@${PATCHED_VERSION} (porsager/postgres#1208) in ${dir}`
    : `postgres@${PATCHED_VERSION} in ${dir} is already patched`;
}

/** What the postinstall does for Parley in `root`: the one line it prints. It never throws. */
export function postinstall(root = PARLEY_ROOT) {
  const prefix = 'parley: postgres.js not patched';
  try {
    const dir = installedDir(root);
    if (dir === null) return `${prefix}: not installed (an optional dependency, needed only by the PostgreSQL store)`;
    const why = notOurs(dir, root);
    if (why !== null) return `${prefix}: ${why}`;
    return patchedLine(dir);
  } catch (err) {
    return `${prefix}: ${String(err.message).split('\n')[0]}`;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2];
  if (dir === undefined) {
    // `npm install --package-lock-only` runs this too, with nothing installed: there is nothing to patch.
    if (process.env.npm_config_package_lock_only !== 'true') console.log(postinstall());
  } else {
    try {
      console.log(patchedLine(dir));
    } catch (err) {
      console.error(`parley: cannot patch postgres.js: ${err.message}`);
      process.exit(1);
    }
  }
}
