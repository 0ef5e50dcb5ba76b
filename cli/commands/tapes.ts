// `parley tapes list|show|check <dir>` (D-145): the tapes a server recorded with --record-tapes, read
// as conversations, and checked against the live model for drift (a nightly job's exit code).
import fs from 'node:fs/promises';
import { Command, Option } from 'commander';
import { parseModelSpec, ModelSpecError } from '../../src/engines/index.ts';
import { answerOf, driftOf, type TapeAnswer } from '../../src/engines/tape-answer.ts';
import { parseTape, tapeHeads, type Tape } from '../../src/engines/tapes.ts';
import { ConfigError, SETTINGS } from '../../src/settings.ts';
import type { Session } from '../context.ts';
import { ConnectionError, describeNetworkError, TimeoutError } from '../core/error.ts';
import { UsageError } from '../io.ts';

async function readTapes(dir: string): Promise<Array<{ file: string; tape: Tape }>> {
  const heads = await tapeHeads(dir);
  if (heads.length === 0) throw new UsageError(`no tapes in ${dir} (record them with parley serve --record-tapes ${dir})`);
  return Promise.all(heads.map(async ({ file }) => ({ file, tape: parseTape(await fs.readFile(file, 'utf8')) })));
}

const oneLine = (s: string, max = 70) => {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};

function summary(a: TapeAnswer): string {
  const parts = a.calls.map((c) => `→ ${c}`);
  if (a.text) parts.unshift(JSON.stringify(oneLine(a.text, 50)));
  return parts.join(' ') || '(no answer)';
}

/** A tape as the conversation a person reads: each turn of the request, then the answer streamed. */
function show(tape: Tape): string[] {
  const h = tape.head;
  const lines = [
    `tape ${h.key}: ${h.engine}:${h.model}, HTTP ${h.status}, ${tape.chunks.length} chunks over ${tape.end.ms} ms (${tape.end.end})`,
    '',
  ];
  type Turn = {
    role?: string;
    content?: unknown;
    tool_name?: string;
    tool_call_id?: string;
    tool_calls?: Array<{ function?: { name?: string; arguments?: unknown } }>;
  };
  for (const m of (h.request.messages as Turn[]) ?? []) {
    const who = m.role === 'tool' ? `tool ${m.tool_name ?? m.tool_call_id ?? ''}`.trim() : String(m.role);
    if (m.content) lines.push(`${who}: ${String(m.content)}`);
    for (const c of m.tool_calls ?? [])
      lines.push(
        `${who} → ${c.function?.name} ${typeof c.function?.arguments === 'string' ? c.function.arguments : JSON.stringify(c.function?.arguments)}`,
      );
  }
  const answer = answerOf(
    h.engine,
    tape.chunks.map((c) => c.chunk),
  );
  lines.push('', `— answer${tape.chunks[0] ? ` (first chunk at ${tape.chunks[0].ms} ms)` : ''} —`);
  if (answer.text) lines.push(`assistant: ${answer.text}`);
  for (const c of answer.calls) lines.push(`assistant → ${c}`);
  if (!answer.text && answer.calls.length === 0)
    lines.push(
      tape.chunks
        .map((c) => c.chunk)
        .join('')
        .trim() || '(nothing)',
    );
  return lines;
}

/** The live engine: --model, else PARLEY_MODEL, at OPENAI_BASE_URL or OLLAMA_HOST (the server's own parsers). */
function liveEngine(session: Session, model: string | undefined) {
  const env = session.io.env;
  // D-144: the key is sent, never printed, whatever an error says.
  session.out.addSecret(env.OPENAI_API_KEY);
  const spec = model ?? env.PARLEY_MODEL;
  if (!spec) throw new UsageError('no live model: give --model openai:<model> or ollama:<model>, or set PARLEY_MODEL');
  try {
    const parsed = parseModelSpec(spec);
    if (parsed.kind === 'local') throw new UsageError('the local engine makes no model calls: name an ollama: or openai: model');
    if (parsed.kind === 'ollama') {
      const host = SETTINGS.ollamaHost.parse(env.OLLAMA_HOST || SETTINGS.ollamaHost.default, 'OLLAMA_HOST', env);
      return { ...parsed, url: `${host}/api/chat`, headers: {} as Record<string, string> };
    }
    if (!env.OPENAI_BASE_URL) throw new UsageError('openai:<model> needs OPENAI_BASE_URL');
    const base = SETTINGS.openaiBaseUrl.parse(env.OPENAI_BASE_URL, 'OPENAI_BASE_URL', env);
    const headers: Record<string, string> = env.OPENAI_API_KEY ? { authorization: `Bearer ${env.OPENAI_API_KEY}` } : {};
    return { ...parsed, url: `${base}/chat/completions`, headers };
  } catch (err) {
    if (err instanceof ModelSpecError || err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
}

/** One request to the live model, read whole; a network failure or a timeout exits 3 naming the URL. */
async function ask(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  seconds: number,
): Promise<{ status: number; text: string }> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(seconds * 1000),
    });
    return { status: res.status, text: await res.text() };
  } catch (err) {
    if ((err as Error).name === 'TimeoutError') throw new TimeoutError(url, `no whole answer within ${seconds} s`, { cause: err });
    throw new ConnectionError(url, describeNetworkError(err), { cause: err });
  }
}

export function tapesCommand(session: Session): Command {
  const tapes = new Command('tapes')
    .description('model tapes recorded with --record-tapes: list, show, check against the live model (docs/agent.md#tapes)')
    .addHelpText(
      'after',
      '\nExamples:\n  parley tapes list tapes/\n  PARLEY_MODEL=openai:qwen3 OPENAI_BASE_URL=http://127.0.0.1:8080/v1 parley tapes check tapes/\n',
    );
  tapes
    .command('list <dir>')
    .description('one line per tape: its key, engine and model, status, duration and answer')
    .addHelpText('after', '\nExample:\n  parley tapes list tapes/\n')
    .action(async (dir: string) => {
      for (const { tape } of await readTapes(dir)) {
        const h = tape.head;
        const turns = ((h.request.messages as unknown[]) ?? []).length;
        session.out.line(
          `${h.key}  ${h.engine}:${h.model}  ${h.status}  ${turns} messages  ${tape.end.ms} ms  ${summary(
            answerOf(
              h.engine,
              tape.chunks.map((c) => c.chunk),
            ),
          )}`,
        );
      }
    });
  tapes
    .command('show <dir> [key]')
    .description('print a tape (or every tape) as the conversation a person would read')
    .addHelpText('after', '\nExamples:\n  parley tapes show tapes/\n  parley tapes show tapes/ 3f9a2c\n')
    .action(async (dir: string, key: string | undefined) => {
      const all = await readTapes(dir);
      const chosen = key ? all.filter(({ tape }) => tape.head.key.startsWith(key)) : all;
      if (chosen.length === 0) throw new UsageError(`no tape ${key} in ${dir}`);
      chosen.forEach(({ tape }, i) => {
        if (i > 0) session.out.line('');
        for (const l of show(tape)) session.out.line(l);
      });
    });
  tapes
    .command('check <dir>')
    .description("send each tape's request to the live model and report drift; exits 1 on drift")
    .option('--model <model>', 'the live model, openai:<model> or ollama:<model> (env PARLEY_MODEL)')
    .addHelpText('after', '\nExample:\n  parley tapes check tapes/ --model openai:qwen3 --threshold 0.3\n')
    .addOption(new Option('--threshold <share>', 'the share of words a text may change, 0 to 1').default('0.2'))
    .addOption(new Option('--timeout <s>', "seconds each answer may take (the openai client's own bound)").default('600'))
    .action(async (dir: string, opts: { model?: string; threshold: string; timeout: string }) => {
      const threshold = Number(opts.threshold);
      if (!/^\d+(\.\d+)?$/.test(opts.threshold) || threshold > 1)
        throw new UsageError(`--threshold must be a number from 0 to 1 (got ${opts.threshold})`);
      const seconds = Number(opts.timeout);
      if (!/^\d+$/.test(opts.timeout) || seconds < 1)
        throw new UsageError(`--timeout must be a whole number of seconds (got ${opts.timeout})`);
      const live = liveEngine(session, opts.model);
      let drifted = 0;
      let checked = 0;
      for (const { tape } of await readTapes(dir)) {
        const h = tape.head;
        if (h.engine !== live.kind) {
          session.out.line(`skip   ${h.key}  recorded from ${h.engine}, the live engine is ${live.kind}`);
          continue;
        }
        const res = await ask(live.url, live.headers, { ...h.request, model: live.model }, seconds);
        const reasons =
          res.status !== h.status
            ? [`HTTP ${res.status}, recorded ${h.status}`]
            : driftOf(
                answerOf(
                  h.engine,
                  tape.chunks.map((c) => c.chunk),
                ),
                answerOf(h.engine, [res.text]),
                threshold,
              );
        checked++;
        if (reasons.length) drifted++;
        session.out.line(`${reasons.length ? 'drift' : 'ok   '}  ${h.key}${reasons.length ? `: ${reasons.join('; ')}` : ''}`);
      }
      session.out.line(`${checked} checked against ${live.kind}:${live.model}, ${drifted} drifted`);
      if (checked === 0) throw new UsageError(`no tape of ${live.kind} in ${dir}`);
      if (drifted > 0) session.exitCode = 1;
    });
  return tapes;
}
