// The client kit's adapter for the `parley` command line (docs/client-kit.md): each task done with the
// commands a support engineer would type, their --json output turned into the kit's protocol. What is
// judged is the CLI's: its retries, its resumption, what it prints; the adapter only reshapes.
import { spawn } from 'node:child_process';
import path from 'node:path';
import jsonpatch from 'fast-json-patch';

const BIN = path.resolve(import.meta.dirname, '../../../bin/parley.js');
const env = process.env;

/** Runs `parley --json …`; resolves to its stdout lines, rejects with its exit code and stderr. */
function parley(args, onLine) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, '--json', '--retry', '4', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines = [];
    let rest = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      const parts = (rest + d).split('\n');
      rest = parts.pop();
      for (const l of parts.filter(Boolean)) {
        lines.push(l);
        onLine?.(l);
      }
    });
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('close', (code) => (code === 0 ? resolve(lines) : reject({ code, lines, stderr })));
  });
}

/** The error object a failed command printed with --json, as the protocol reports it. */
function errorOf(failure) {
  const body = failure.lines?.map((l) => JSON.parse(l)).find((j) => j.error)?.error;
  const status = Number(/\((\d{3})\)/.exec(failure.stderr ?? '')?.[1] ?? 0);
  return { status, type: body?.type ?? null, code: body?.code ?? null };
}

/** The protocol's form of a Response: its text, and its data_spec patches applied as one form item. */
function shown(response) {
  const text = response.output
    .filter((i) => i.type === 'message')
    .flatMap((i) => i.content.map((p) => p.text ?? ''))
    .join('');
  const patches = response.output.filter((i) => i.type === 'data_spec').map((i) => i.data.patch);
  const at = response.output.findIndex((i) => i.type === 'data_spec');
  const items = response.output.filter((i) => i.type !== 'data_spec');
  if (at >= 0) items.splice(at, 0, { type: 'form', state: jsonpatch.applyPatch({}, patches, false, false).newDocument });
  return { text, response_id: response.id, status: response.status, items };
}

async function task() {
  const t = env.PARLEY_TASK;
  if (t === 'create-conversation')
    return { conversation_id: JSON.parse((await parley(['conversations', 'create', '--title', env.PARLEY_TITLE]))[0]).id };
  if (t === 'send-json')
    return shown(JSON.parse((await parley(['send', env.PARLEY_CONVERSATION_ID, env.PARLEY_MESSAGE, '--no-stream']))[0]));
  if (t === 'send-stream') {
    // One event payload a line (D-61's ndjson); the reply is then read back as the CLI's user would with `responses get`.
    // A reply that failed exits 1 after its events (D-17): they are still what the CLI showed.
    const lines = await parley(['send', env.PARLEY_CONVERSATION_ID, env.PARLEY_MESSAGE, '--stream']).catch((failure) => {
      if (failure.lines?.some((l) => JSON.parse(l).type === 'response.created')) return failure.lines;
      throw failure;
    });
    const events = lines.map((l) => JSON.parse(l));
    const created = events.find((e) => e.type === 'response.created');
    const id = created?.response?.id ?? created?.id;
    const text = events
      .filter((e) => e.type === 'response.output_text.delta')
      .map((e) => e.delta)
      .join('');
    const end = events.findLast((e) => e.type === 'response.completed' || e.type === 'response.failed');
    const response = JSON.parse((await parley(['responses', 'get', id]))[0]);
    return { ...shown(response), text, status: end?.type === 'response.completed' ? 'completed' : 'failed' };
  }
  if (t === 'complete') {
    const c = JSON.parse((await parley(['complete', env.PARLEY_PROMPT]))[0]);
    return { text: c.text, status: c.status };
  }
  if (t === 'list-all') {
    const pages = await parley(['conversations', 'list', '--all', '--limit', '100', '--order', env.PARLEY_ORDER]);
    return { ids: pages.flatMap((l) => JSON.parse(l).data.map((c) => c.id)) };
  }
  return { unsupported: true };
}

try {
  console.log(JSON.stringify(await task()));
} catch (failure) {
  console.log(JSON.stringify({ error: failure.lines ? errorOf(failure) : { status: 0, type: String(failure), code: null } }));
  process.exitCode = 1;
}
