// What a streamed send asks of the kernel on the file store: the system calls per send (strace -c of
// N sends less those of none, client included: it is the same process) and, for the last of three sends,
// each file synced or renamed in turn. Needs strace (Debian's `strace`).
// `node --import tsx bench/lab/send-syscalls.ts [sends=200]`
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { startParley } from '../../src/app.ts';
import { AUTH } from '../data.ts';

const CALLS = 'fsync,fdatasync,write,pwrite64,writev,rename,openat,close,read,unlink,statx,newfstatat,epoll_pwait,futex';

/** The sends themselves, in the process strace follows: `--sends K DIR` (DIR is removed by the parent, uncounted). */
async function sends(n: number, dir: string): Promise<void> {
  const p = await startParley({ dataDir: dir, port: 0, logger: pino({ level: 'silent' }) });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const req = (method: string, url: string, body: string) =>
    new Promise<string>((resolve, reject) => {
      const headers = { ...AUTH, 'content-type': 'application/json' };
      const r = http.request({ host: '127.0.0.1', port: p.port, method, path: url, agent, headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve(text));
      });
      r.on('error', reject);
      r.end(body);
    });
  try {
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push((JSON.parse(await req('POST', '/v1/apps/app_stream/conversations', '{}')) as { id: string }).id);
    const body = JSON.stringify({ message: { content: 'Tell me about the Montreal office.' }, stream: true });
    // Each conversation has a history (and its folder) before the sends counted.
    for (const id of ids) await req('POST', `/v1/apps/app_stream/conversations/${id}`, body);
    process.stderr.write('--- sends ---\n');
    for (let i = 0; i < n; i++) await req('POST', `/v1/apps/app_stream/conversations/${ids[i % ids.length]}`, body);
    process.stderr.write('--- end ---\n');
    // What the last send left to do in the background, done before the count stops.
    await new Promise((r) => setTimeout(r, 1_500));
  } finally {
    await p.close();
    agent.destroy();
  }
}

/** strace's summary table as calls by name. */
function counts(file: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const p = line.trim().split(/\s+/);
    if (p.length >= 5 && /^\d/.test(p[0]!) && /^[a-z_0-9]+$/.test(p.at(-1)!) && p.at(-1) !== 'total') out.set(p.at(-1)!, Number(p[3]));
  }
  return out;
}

const at = process.argv.indexOf('--sends');
if (at !== -1) await sends(Number(process.argv[at + 1]), process.argv[at + 2]!);
else {
  const n = Number(process.argv[2] ?? 200);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'send-syscalls-'));
  const self = ['--import', import.meta.resolve('tsx'), import.meta.filename, '--sends'];
  try {
    const data = (k: string) => fs.mkdtempSync(path.join(tmp, `send-syscalls-${k}-`));
    const run = (k: number) => {
      const out = path.join(tmp, `c${k}.txt`);
      execFileSync('strace', ['-f', '-c', '-o', out, '-e', `trace=${CALLS}`, process.execPath, ...self, String(k), data(String(k))], {
        stdio: 'ignore',
      });
      return counts(out);
    };
    const none = run(0);
    const many = run(n);
    console.log(`| system call | per streamed send (${n} sends, client included) |\n|---|---|`);
    for (const [call, c] of [...many].sort((x, y) => y[1] - x[1]))
      console.log(`| ${call} | ${((c - (none.get(call) ?? 0)) / n).toFixed(2)} |`);
    // The last of three sends, file by file (paths shortened; ids replaced).
    const trace = path.join(tmp, 'trace.txt');
    execFileSync(
      'strace',
      ['-f', '-y', '-o', trace, '-e', 'trace=fsync,fdatasync,rename,write', process.execPath, ...self, '3', data('3')],
      { stdio: 'ignore' },
    );
    const lines = fs.readFileSync(trace, 'utf8').split('\n');
    const last = lines.filter((l) => /fsync|fdatasync|rename\(/.test(l) && /send-syscalls-3-/.test(l));
    console.log('\nThe last send, each file synced or renamed in turn:');
    for (const l of last.slice(-12))
      console.log(
        '  ' +
          l
            .replace(/^\d+\s+/, '')
            .replace(/\/[^\s"<>]*send-syscalls-3-[A-Za-z0-9]+/g, 'DATA')
            .replace(/(resp|conv)_[a-z0-9]+/g, '$1_…')
            .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '…'),
      );
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
