// §6 events: the conversation and completion streams, their framing, order and payloads (D-16,
// D-18, D-20), data_spec patches (D-22), function calls (D-21), and agreement with persisted items.
import jsonpatch from 'fast-json-patch';
import { STREAM_EVENT_TYPES, type StreamEventType } from '../../src/contract/index.ts';
import { deepEqual, defineCases, CaseSkip, type CaseContext, type CaseDef } from '../context.ts';
import type { Exchange } from '../http.ts';
import {
  appPath,
  contentOf,
  convPath,
  createConversation,
  expectStream,
  getConversation,
  HOSTILE_TEXT,
  mentions,
  textOf,
  type Json,
} from './common.ts';

/** The probe messages; the reference answers the two questions with a knowledge_search call (D-21), the form request with a form (D-22). */
export const QUESTION = `Hello! How do I reset my password? ${HOSTILE_TEXT}`;
export const KB_QUESTION = `What does your knowledge base say about resetting a password? ${HOSTILE_TEXT}`;
export const FORM_REQUEST = `I would like to book an appointment. Please show me the booking form. ${HOSTILE_TEXT}`;

interface Streamed {
  ex: Exchange;
  conversationId?: string;
}

/** One conversation stream per run and app, shared by the §6 cases. */
function conversationStream(ctx: CaseContext, app = ctx.target.appId, content = QUESTION): Promise<Streamed> {
  return ctx.once(`stream: conversation on ${app}: ${content}`, async () => {
    const { conv } = await createConversation(ctx, undefined, app);
    const ex = await ctx.send({ method: 'POST', path: convPath(app, conv.id), body: { message: { content }, stream: true } });
    expectStream(ctx, ex, 'conversation stream');
    return { ex, conversationId: conv.id };
  });
}

function completionStream(ctx: CaseContext): Promise<Streamed> {
  return ctx.once('stream: completion', async () => {
    const ex = await ctx.send({
      method: 'POST',
      path: appPath(ctx.target.appId, 'completions'),
      body: { prompt: `Write one sentence welcoming a new customer. ${HOSTILE_TEXT}`, stream: true },
    });
    expectStream(ctx, ex, 'completion stream');
    return { ex };
  });
}

const TEXT_EVENTS = new Set(['response.created', 'response.output_text.delta', 'response.output_text.done', 'response.completed']);

export function checkStartEnd(ctx: CaseContext, ex: Exchange, object: 'response' | 'completion', conversationId?: string): void {
  const events = ex.sse!.events;
  const first = events[0]!;
  ctx.equal(first.event, 'response.created', 'first event', ex);
  const created = ctx.shape(first.json, ctx.schemas.events['response.created'], 'response.created payload', ex) as Json;
  ctx.equal(created.object, object, 'response.created object', ex);
  if (conversationId !== undefined) ctx.equal(created.conversation_id, conversationId, 'response.created conversation_id', ex);
  else
    ctx.check(
      typeof created.conversation_id !== 'string',
      `a completion stream's response.created carries conversation_id ${String(created.conversation_id)}`,
      ex,
    );
  const last = events.at(-1)!;
  ctx.equal(last.event, 'response.completed', 'last event', ex);
  const completed = ctx.shape(last.json, ctx.schemas.events['response.completed'], 'response.completed payload', ex) as Json;
  ctx.equal(completed.id, created.id, 'response.completed id (the id of response.created)', ex);
  const terminal = events.filter((e) => e.event === 'response.completed' || e.event === 'response.failed').length;
  ctx.equal(terminal, 1, 'number of terminal events (response.completed / response.failed)', ex);
  const createdCount = events.filter((e) => e.event === 'response.created').length;
  ctx.equal(createdCount, 1, 'number of response.created events', ex);
}

/** §6 lists the events a stream carries: a type outside its table (a misspelt one) is no event of the interface. */
function checkPayloads(ctx: CaseContext, ex: Exchange): void {
  ex.sse!.events.forEach((e, i) => {
    if (!(STREAM_EVENT_TYPES as readonly string[]).includes(e.event))
      ctx.fail(`event #${i} has a type outside §6: ${JSON.stringify(e.event)}`, ex);
    ctx.shape(e.json, ctx.schemas.events[e.event as StreamEventType], `event #${i} (${e.event}) payload`, ex);
  });
}

/** RFC 6901: a JSON Pointer is "" or "/" and reference tokens, where "~" is only "~0" or "~1". */
const JSON_POINTER = /^(\/([^~]|~[01])*)*$/;

/**
 * §2.4, §6 rule 3: a patch is one RFC 6902 operation (§4 there): a known op, a path that is a JSON
 * Pointer, a value for add, replace and test, a from (a pointer) for move and copy.
 */
function patchProblem(patch: unknown): string | undefined {
  if (!patch || typeof patch !== 'object' || Array.isArray(patch)) return 'is not an object';
  const p = patch as Json;
  if (!['add', 'remove', 'replace', 'move', 'copy', 'test'].includes(String(p.op)))
    return `has op ${JSON.stringify(p.op)}, not an RFC 6902 operation`;
  if (typeof p.path !== 'string' || !JSON_POINTER.test(p.path))
    return `has path ${JSON.stringify(p.path)}, not a JSON Pointer (RFC 6901: "" or starting with "/")`;
  if (['add', 'replace', 'test'].includes(p.op as string) && !('value' in p)) return `is a ${String(p.op)} without a value`;
  if (['move', 'copy'].includes(p.op as string) && (typeof p.from !== 'string' || !JSON_POINTER.test(p.from)))
    return `is a ${String(p.op)} whose from ${JSON.stringify(p.from)} is not a JSON Pointer`;
  return undefined;
}

function checkPatches(ctx: CaseContext, values: Json[], ex?: Exchange): void {
  values.forEach((data, i) => {
    const problem = patchProblem(data.patch);
    if (problem) ctx.fail(`data_spec patch #${i} ${JSON.stringify(data.patch).slice(0, 160)} ${problem}`, ex);
  });
}

export function checkText(ctx: CaseContext, ex: Exchange): void {
  const a = expectStream(ctx, ex, 'stream');
  ctx.check(a.done.size > 0, 'no response.output_text.done event', ex);
  for (const [key, text] of a.done)
    ctx.equal(a.deltas.get(key) ?? '', text, `concatenated deltas of output/content index ${key} compared with output_text.done`, ex);
  for (const key of a.deltas.keys()) ctx.check(a.done.has(key), `deltas of output/content index ${key} have no output_text.done`, ex);
  // A delta after the done of its part would be a late chunk.
  const doneAt = new Map<string, number>();
  ex.sse!.events.forEach((e, i) => {
    const p = e.json as Json;
    const key = `${String(p.output_index)}:${String(p.content_index)}`;
    if (e.event === 'response.output_text.done') doneAt.set(key, i);
    if (e.event === 'response.output_text.delta' && doneAt.has(key))
      ctx.fail(`event #${i}: a delta of ${key} after its output_text.done`, ex);
  });
}

function checkSequence(ctx: CaseContext, ex: Exchange): void {
  ex.sse!.events.forEach((e, i) => {
    const p = e.json as Json;
    ctx.equal(p.type, e.event, `event #${i} payload type`, ex);
    ctx.equal(p.sequence_number, i, `event #${i} sequence_number`, ex);
  });
}

/**
 * §6: "each event is two lines", `event: <type>` then `data: <json>`, so a payload is one data line.
 * What any SSE client reads the same stays open: CR LF or CR line ends, comment lines (`: keep-alive`),
 * no space after the colon, blank lines between events, and the two other fields SSE defines, `id:`
 * and `retry:`: §1 and §6 name the format SSE, and those fields set the stream's last event id and
 * reconnection time without changing any event's type or data, which are the two lines §6 describes.
 */
function checkTwoLineEvents(ctx: CaseContext, ex: Exchange): void {
  ex.text
    .replace(/\r\n?/g, '\n')
    .split('\n\n')
    .forEach((block, i) => {
      const lines = block.split('\n').filter((l) => l !== '' && !l.startsWith(':') && !/^(id|retry)(:|$)/.test(l));
      if (lines.length === 0) return;
      ctx.check(
        lines.length === 2 && /^event: ?\S/.test(lines[0]!) && /^data: ?\S/.test(lines[1]!),
        `event block #${i} is not the two lines "event: <type>" and "data: <json>" (§6): ${JSON.stringify(block.slice(0, 200))}`,
        ex,
      );
    });
}

/** D-16/§6: each event block is exactly `event: <type>` then `data: <json>`; comments only as `: …` blocks. */
function checkRawFraming(ctx: CaseContext, ex: Exchange): void {
  ctx.check(!ex.text.includes('\r'), 'the stream uses CR line endings (D-16: LF only)', ex);
  ctx.check(ex.text.endsWith('\n\n'), 'the stream does not end with a blank line after its last event', ex);
  const blocks = ex.text.split('\n\n').slice(0, -1);
  blocks.forEach((block, i) => {
    const lines = block.split('\n');
    if (lines.every((l) => l.startsWith(':'))) return;
    ctx.check(
      lines.length === 2 && /^event: \S+$/.test(lines[0]!) && /^data: \S/.test(lines[1]!),
      `block #${i} is not exactly "event: <type>" + "data: <json>": ${JSON.stringify(block.slice(0, 200))}`,
      ex,
    );
  });
}

/** Items of the stream, rebuilt from its events (D-20: output_index is the item's index). */
function itemsFromStream(ctx: CaseContext, ex: Exchange): Json[] {
  const items: Json[] = [];
  for (const e of ex.sse!.events) {
    const p = e.json as Json;
    const i = Number(p.output_index);
    if (e.event === 'response.output_text.done') items[i] = { type: 'message', role: 'assistant', text: String(p.text) };
    if (e.event === 'response.function_call_arguments.done')
      items[i] = { type: 'function_call', name: p.name, arguments: p.arguments, call_id: p.call_id };
    if (e.event === 'response.data_spec') items[i] = { type: 'data_spec', data: p.data };
  }
  for (let i = 0; i < items.length; i++)
    ctx.check(items[i] !== undefined, `output_index ${i} is never used by an event (output_index must count items from 0)`, ex);
  return items;
}

function dataSpecPatches(ctx: CaseContext, values: Json[], ex?: Exchange): void {
  const doc = {};
  values.forEach((data, i) => {
    // A clone: applying inserts `value` into the document, and later patches would mutate the event.
    const patch = structuredClone((data as { patch: jsonpatch.Operation }).patch);
    const err = jsonpatch.validate([patch], doc);
    if (err)
      ctx.fail(`data_spec patch #${i} ${JSON.stringify(patch).slice(0, 160)} does not apply to the document built so far: ${err.name}`, ex);
    jsonpatch.applyOperation(doc, patch, false, true);
  });
  const form = (doc as { form?: Json }).form;
  if (!form) ctx.fail(`the patches built ${JSON.stringify(doc).slice(0, 200)}, without /form (D-22)`, ex);
  ctx.check(
    typeof form.title === 'string' && typeof form.submit_label === 'string' && Array.isArray(form.fields),
    `the patches built ${JSON.stringify(doc).slice(0, 200)}, not a /form {title, fields, submit_label} (D-22)`,
    ex,
  );
  (form.fields as Json[]).forEach((f, i) => {
    ctx.check(
      typeof f.name === 'string' && typeof f.label === 'string' && typeof f.type === 'string' && typeof f.required === 'boolean',
      `form field #${i} is not {name, label, type, required}: ${JSON.stringify(f)}`,
      ex,
    );
  });
}

/**
 * §2.4 types name, arguments and call_id "string or null"; arguments, when given, are JSON. The
 * reference (D-16, D-21) always names the call, gives it an id and calls knowledge_search {"query"}.
 */
function functionCallsWellFormed(ctx: CaseContext, calls: Json[], where: string, ex?: Exchange): void {
  calls.forEach((c, i) => {
    if (ctx.reference) {
      ctx.check(typeof c.name === 'string' && c.name.length > 0, `${where} function_call #${i} has no name (D-21)`, ex);
      ctx.check(typeof c.call_id === 'string' && c.call_id.length > 0, `${where} function_call #${i} has no call_id (D-16)`, ex);
    }
    if (c.arguments === null && !ctx.reference) return;
    let args: unknown;
    try {
      args = JSON.parse(String(c.arguments));
    } catch {
      ctx.fail(`${where} function_call #${i} arguments are not JSON-encoded: ${JSON.stringify(c.arguments)}`, ex);
    }
    if (ctx.reference) {
      ctx.equal(c.name, 'knowledge_search', `${where} function_call #${i} name (D-21)`, ex);
      ctx.check(
        typeof (args as Json)?.query === 'string',
        `${where} function_call #${i} arguments are not {"query": string} (D-21): ${String(c.arguments)}`,
        ex,
      );
    }
  });
  const ids = calls.map((c) => c.call_id).filter((id) => id !== null);
  ctx.check(new Set(ids).size === ids.length, `${where}: two function calls share a call_id`, ex);
}

export const conversationStreamCases: CaseDef[] = defineCases('6', [
  {
    id: 'S6-conv-content-type',
    level: 'MUST',
    clauses: ['§6.content-type', '§4.6.success-sse'],
    description: 'a conversation stream is 200 text/event-stream and ends (the connection closes after the last event)',
    async run(ctx) {
      await conversationStream(ctx);
    },
  },
  {
    id: 'S6-conv-framing',
    level: 'MUST',
    clauses: ['§6.two-lines'],
    description:
      'every event is the two lines "event: <type>" and "data: <json object>" (CR LF and ": …" comments allowed, as in any SSE stream)',
    async run(ctx) {
      const { ex } = await conversationStream(ctx);
      ex.sse!.events.forEach((e, i) => {
        ctx.check(e.event !== 'message', `event #${i} has no "event:" line (data ${e.data.slice(0, 80)})`, ex);
      });
      ctx.equal(ex.sse!.parseErrors, [], 'SSE parse errors', ex);
      checkTwoLineEvents(ctx, ex);
    },
  },
  {
    id: 'S6-conv-raw-framing',
    level: 'REFERENCE',
    clauses: ['D-16', 'D-18'],
    description:
      'D-16/D-18: each event is exactly the two lines "event: <type>" and "data: <json>" then a blank line; only ": …" comments besides',
    async run(ctx) {
      checkRawFraming(ctx, (await conversationStream(ctx)).ex);
    },
  },
  {
    id: 'S6-conv-headers',
    level: 'REFERENCE',
    clauses: ['D-18'],
    description: 'D-18: a stream is sent with Cache-Control: no-cache',
    async run(ctx) {
      const { ex } = await conversationStream(ctx);
      ctx.check(
        /no-cache/i.test(ex.headers.get('cache-control') ?? ''),
        `Cache-Control is ${JSON.stringify(ex.headers.get('cache-control'))}`,
        ex,
      );
    },
  },
  {
    id: 'S6-conv-starts-created-ends-completed',
    level: 'MUST',
    clauses: ['§6.rule1', '§6.created.fields', '§6.completed.fields', '§3.in-progress'],
    description:
      'rule 1: the stream starts with response.created {id, object: "response", status: in_progress, conversation_id} and ends with one response.completed of that id',
    async run(ctx) {
      const { ex, conversationId } = await conversationStream(ctx);
      checkStartEnd(ctx, ex, 'response', conversationId);
    },
  },
  {
    id: 'S6-conv-payloads',
    level: 'MUST',
    clauses: [
      '§6.created.fields',
      '§6.delta.fields',
      '§6.done.fields',
      '§6.completed.fields',
      '§6.function_call.start',
      '§6.function_call_arguments.delta',
      '§6.function_call_arguments.done',
      'D-16',
    ],
    description: 'every event is of a type §6 lists, and its payload has the fields §6 lists for that type (reference: the D-16 payloads)',
    async run(ctx) {
      checkPayloads(ctx, (await conversationStream(ctx)).ex);
    },
  },
  {
    id: 'S6-conv-text-assembles',
    level: 'MUST',
    clauses: ['§6.done.fields'],
    description: 'concatenated output_text.delta chunks equal their output_text.done text, and no delta follows its done',
    async run(ctx) {
      checkText(ctx, (await conversationStream(ctx)).ex);
    },
  },
  {
    id: 'S6-conv-sequence-numbers',
    level: 'REFERENCE',
    clauses: ['D-16'],
    description: 'D-16: every payload carries type = its event name and sequence_number counting from 0 without gaps',
    async run(ctx) {
      checkSequence(ctx, (await conversationStream(ctx)).ex);
    },
  },
  {
    id: 'S6-conv-persisted-agree',
    level: 'REFERENCE',
    clauses: ['D-14', 'D-20'],
    description: "D-14/D-20: the items persisted for a streamed response are the stream's output, in output_index order",
    async run(ctx) {
      const { ex, conversationId } = await conversationStream(ctx);
      const fromStream = itemsFromStream(ctx, ex);
      const responseId = (ex.sse!.events[0]!.json as Json).id;
      const got = await getConversation(ctx, conversationId!);
      // The user's message may carry the response id too (it does in the reference); it is not output.
      const persisted = got.items.filter((it) => it.response_id === responseId && !(it.type === 'message' && it.role === 'user'));
      ctx.equal(contentOf(persisted), fromStream, `items of response ${String(responseId)} compared with the stream`);
    },
  },
  {
    id: 'S6-json-output-matches-stream-shape',
    level: 'MUST',
    clauses: ['§6.rule4', '§6.function_call.start'],
    description:
      'rule 4: the same message in JSON mode gives the kinds of output items a stream of it carries (messages with text, function calls, data_spec), up to 3 tries for an agent that varies',
    async run(ctx) {
      let last = '';
      for (let attempt = 1; attempt <= 3; attempt++) {
        const { ex: streamed } = await freshExchange(ctx, true);
        expectStream(ctx, streamed, 'conversation stream');
        const { ex } = await freshExchange(ctx, false);
        const r = ctx.ok(ex, ctx.schemas.response, 'send message (JSON)') as Json;
        const output = r.output as Json[];
        // A message whose content is null (§2.4) carries no content, so no text events either.
        const carried = output.filter((o) => !(o.type === 'message' && o.content === null));
        for (const item of carried) if (item.type === 'message') ctx.check(textOf(item).length > 0, 'a message item with no text', ex);
        const fromStream = streamKinds(streamed);
        const fromJson = countKinds(carried.map((o) => String(o.type)));
        if (deepEqual(fromStream, fromJson)) return;
        last = `the stream carried ${JSON.stringify(fromStream)} but the JSON output holds ${JSON.stringify(fromJson)}`;
      }
      ctx.fail(`${last} (3 tries of the same message in each mode)`);
    },
  },
]);

async function freshExchange(ctx: CaseContext, stream: boolean): Promise<{ ex: Exchange }> {
  const { conv } = await createConversation(ctx);
  return {
    ex: await ctx.send({ method: 'POST', path: convPath(ctx.target.appId, conv.id), body: { message: { content: QUESTION }, stream } }),
  };
}

function countKinds(kinds: string[]): Record<string, number> {
  const n: Record<string, number> = {};
  for (const k of kinds) n[k] = (n[k] ?? 0) + 1;
  return n;
}

/**
 * Output items a stream carries, by kind: a message per output_index of its text events, a
 * function call per function_call.start (its payload is not shown in §6), a data_spec per event.
 */
function streamKinds(ex: Exchange): Record<string, number> {
  const messages = new Set<unknown>();
  const kinds: string[] = [];
  for (const e of ex.sse!.events) {
    const p = e.json as Json;
    if (e.event === 'response.output_text.delta' || e.event === 'response.output_text.done') messages.add(p.output_index);
    if (e.event === 'response.function_call.start') kinds.push('function_call');
    if (e.event === 'response.data_spec') kinds.push('data_spec');
  }
  return countKinds([...[...messages].map(() => 'message'), ...kinds]);
}

export const completionStreamCases: CaseDef[] = defineCases('6', [
  {
    id: 'S6-cmpl-stream',
    level: 'MUST',
    clauses: ['§6.rule2', '§4.7.stream', '§3.in-progress', '§6.completed.fields'],
    description:
      'rule 2: a completion stream starts with response.created (object "completion", no conversation_id), carries only text events and ends with response.completed',
    async run(ctx) {
      const { ex } = await completionStream(ctx);
      checkStartEnd(ctx, ex, 'completion');
      ex.sse!.events.forEach((e, i) => {
        ctx.check(TEXT_EVENTS.has(e.event), `event #${i} of a completion stream is ${e.event}, not a text event`, ex);
      });
    },
  },
  {
    id: 'S6-cmpl-framing',
    level: 'MUST',
    clauses: ['§6.two-lines'],
    description: 'every event of a completion stream is the two lines "event: <type>" and "data: <json object>"',
    async run(ctx) {
      const { ex } = await completionStream(ctx);
      ctx.equal(ex.sse!.parseErrors, [], 'SSE parse errors', ex);
      checkTwoLineEvents(ctx, ex);
    },
  },
  {
    id: 'S6-cmpl-payloads',
    level: 'MUST',
    clauses: ['§6.created.fields', '§6.delta.fields', '§6.done.fields', 'D-16'],
    description: 'completion stream payloads have the §6 fields (reference: D-16)',
    async run(ctx) {
      checkPayloads(ctx, (await completionStream(ctx)).ex);
    },
  },
  {
    id: 'S6-cmpl-text-assembles',
    level: 'MUST',
    clauses: ['§6.done.fields'],
    description: 'completion stream: concatenated deltas equal the output_text.done text',
    async run(ctx) {
      checkText(ctx, (await completionStream(ctx)).ex);
    },
  },
  {
    id: 'S6-cmpl-sequence-numbers',
    level: 'REFERENCE',
    clauses: ['D-16'],
    description: 'D-16: completion stream payloads carry type and gapless sequence_number from 0',
    async run(ctx) {
      checkSequence(ctx, (await completionStream(ctx)).ex);
    },
  },
  {
    id: 'S6-cmpl-raw-framing',
    level: 'REFERENCE',
    clauses: ['D-16', 'D-18'],
    description: 'D-16: completion stream events are exactly "event:" + "data:" lines',
    async run(ctx) {
      checkRawFraming(ctx, (await completionStream(ctx)).ex);
    },
  },
  {
    id: 'S6-cmpl-id-prefix',
    level: 'MUST',
    clauses: ['§2.5.id'],
    description: 'the id of a completion stream is a cmpl_ id (§2.5)',
    async run(ctx) {
      const { ex } = await completionStream(ctx);
      const id = String((ex.sse!.events[0]!.json as Json).id);
      ctx.check(id.startsWith('cmpl_'), `response.created id ${id} does not start with cmpl_`, ex);
    },
  },
]);

export const dataSpecCases: CaseDef[] = defineCases('6', [
  {
    id: 'S6-data-spec-stream',
    level: 'MUST',
    clauses: ['§6.rule3', '§6.data_spec.fields', 'D-22'],
    needs: ['apps.generative_ui'],
    description:
      'rule 3: on a generative-UI app a form request streams response.data_spec events whose patch is an RFC 6902 operation: a known op, a JSON Pointer path, a value where the op needs one (reference: applied in order to {} they build /form, D-22)',
    async run(ctx) {
      const { ex, conversationId } = await conversationStream(ctx, ctx.app('apps.generative_ui'), FORM_REQUEST);
      const specs = ex.sse!.events.filter((e) => e.event === 'response.data_spec');
      if (specs.length === 0) throw new CaseSkip('the agent emitted no response.data_spec for the form request');
      checkPayloads(ctx, ex);
      checkStartEnd(ctx, ex, 'response', conversationId);
      const data = specs.map((e) => (e.json as Json).data as Json);
      checkPatches(ctx, data, ex);
      if (ctx.reference) dataSpecPatches(ctx, data, ex);
    },
  },
  {
    id: 'S6-data-spec-json',
    level: 'MUST',
    clauses: ['§2.4.data_spec.data', 'D-22'],
    needs: ['apps.generative_ui'],
    description:
      'in JSON mode data_spec output items carry {type: "patch", patch}, each patch an RFC 6902 operation with a JSON Pointer path (reference: they build /form from {}, D-22)',
    async run(ctx) {
      const app = ctx.app('apps.generative_ui');
      const { conv } = await createConversation(ctx, undefined, app);
      const ex = await ctx.send({
        method: 'POST',
        path: convPath(app, conv.id),
        body: { message: { content: FORM_REQUEST }, stream: false },
      });
      const r = ctx.ok(ex, ctx.schemas.response, 'send message (JSON)') as Json;
      const specs = (r.output as Json[]).filter((o) => o.type === 'data_spec');
      if (specs.length === 0) throw new CaseSkip('the agent emitted no data_spec item for the form request');
      const data = specs.map((s) => s.data as Json);
      checkPatches(ctx, data, ex);
      if (ctx.reference) dataSpecPatches(ctx, data, ex);
    },
  },
  {
    id: 'S6-data-spec-persisted',
    level: 'REFERENCE',
    clauses: ['D-14', 'D-22'],
    needs: ['apps.generative_ui'],
    description: 'D-14: the data_spec items of a streamed response are persisted in the order of their events',
    async run(ctx) {
      const app = ctx.app('apps.generative_ui');
      const { ex, conversationId } = await conversationStream(ctx, app, FORM_REQUEST);
      const specs = ex.sse!.events.filter((e) => e.event === 'response.data_spec').map((e) => (e.json as Json).data);
      if (specs.length === 0) throw new CaseSkip('the agent emitted no response.data_spec for the form request');
      const got = await getConversation(ctx, conversationId!, app);
      ctx.equal(
        got.items.filter((it) => it.type === 'data_spec').map((it) => it.data),
        specs,
        'persisted data_spec items compared with the events',
      );
    },
  },
  {
    id: 'S6-no-data-spec-without-generative-ui',
    level: 'MUST',
    clauses: ['§6.rule3.only-generative-ui', '§2.4.data_spec.only-generative-ui'],
    description: 'rule 3: an app without generative UI emits no data_spec, streamed or in JSON',
    async run(ctx) {
      const { ex } = await conversationStream(ctx, ctx.target.appId, FORM_REQUEST);
      ctx.check(
        !ex.sse!.events.some((e) => e.event === 'response.data_spec'),
        'a response.data_spec event on an app without generative UI',
        ex,
      );
      const { conv } = await createConversation(ctx);
      const json = await ctx.send({
        method: 'POST',
        path: convPath(ctx.target.appId, conv.id),
        body: { message: { content: FORM_REQUEST }, stream: false },
      });
      const r = ctx.ok(json, ctx.schemas.response, 'send message (JSON)') as Json;
      ctx.check(!(r.output as Json[]).some((o) => o.type === 'data_spec'), 'a data_spec output item on an app without generative UI', json);
    },
  },
]);

export const functionCallCases: CaseDef[] = defineCases('6', [
  {
    id: 'S6-function-call-items',
    level: 'MUST',
    clauses: [
      '§2.4.function_call.name',
      '§2.4.function_call.arguments',
      '§2.4.function_call.call_id',
      '§4.3.items-complete',
      'D-14',
      'D-21',
    ],
    needs: ['apps.knowledge_base'],
    description:
      'function_call output items carry name, arguments (JSON-encoded) and call_id, each a string or null, and the calls are kept in the history (reference: knowledge_search {"query"}, D-21; function_call items, D-14)',
    async run(ctx) {
      const app = ctx.app('apps.knowledge_base');
      const { conv } = await createConversation(ctx, undefined, app);
      const ex = await ctx.send({
        method: 'POST',
        path: convPath(app, conv.id),
        body: { message: { content: KB_QUESTION }, stream: false },
      });
      const r = ctx.ok(ex, ctx.schemas.response, 'send message (JSON)') as Json;
      const calls = (r.output as Json[]).filter((o) => o.type === 'function_call');
      if (calls.length === 0) throw new CaseSkip('the agent made no function call for the knowledge-base question');
      functionCallsWellFormed(ctx, calls, 'output', ex);
      const got = await getConversation(ctx, conv.id, app);
      if (ctx.reference) {
        const kept = got.items.filter((it) => it.type === 'function_call').map((it) => it.call_id);
        ctx.check(
          calls.every((c) => kept.includes(c.call_id)),
          `function calls ${JSON.stringify(calls.map((c) => c.call_id))} are not all function_call items of the history (${JSON.stringify(kept)}, D-14)`,
        );
        return;
      }
      // Item fields are not shown (§2.1): the call's id is looked for anywhere in the history.
      const missing = calls.map((c) => c.call_id).filter((id): id is string => typeof id === 'string' && !mentions(got.items, id));
      ctx.check(
        missing.length === 0,
        `function calls ${JSON.stringify(missing)} of the response appear nowhere in the conversation's items`,
      );
    },
  },
  {
    id: 'S6-function-call-stream',
    level: 'MUST',
    clauses: ['§6.function_call.start', '§6.function_call_arguments.delta', '§6.function_call_arguments.done', '§6.rule1'],
    needs: ['apps.knowledge_base'],
    description:
      'a stream in which the agent calls a function keeps rule 1 and carries each function-call event with a JSON object payload',
    async run(ctx) {
      const { ex, conversationId } = await conversationStream(ctx, ctx.app('apps.knowledge_base'), KB_QUESTION);
      if (!ex.sse!.events.some((e) => e.event === 'response.function_call.start'))
        throw new CaseSkip('the agent made no function call for the knowledge-base question');
      checkStartEnd(ctx, ex, 'response', conversationId);
      checkPayloads(ctx, ex);
      checkText(ctx, ex);
    },
  },
  {
    id: 'S6-function-call-events',
    level: 'REFERENCE',
    clauses: ['§6.function_call.start', '§6.function_call_arguments.delta', '§6.function_call_arguments.done', 'D-16', 'D-21'],
    needs: ['apps.knowledge_base'],
    description: 'D-16: function_call.start, then argument deltas, then arguments.done per call_id; deltas concatenate to arguments',
    async run(ctx) {
      const { ex } = await conversationStream(ctx, ctx.app('apps.knowledge_base'), KB_QUESTION);
      const calls = new Map<string, { started: boolean; args: string; done?: Json }>();
      ex.sse!.events.forEach((e, i) => {
        const p = e.json as Json;
        if (!e.event.startsWith('response.function_call')) return;
        const id = String(p.call_id);
        const c = calls.get(id);
        if (e.event === 'response.function_call.start') {
          ctx.check(!c, `event #${i}: a second function_call.start for ${id}`, ex);
          calls.set(id, { started: true, args: '' });
        } else {
          if (!c || c.done) {
            ctx.fail(`event #${i}: ${e.event} for ${id} outside its start…done`, ex);
            return;
          }
          if (e.event === 'response.function_call_arguments.delta') c.args += String(p.delta);
          else c.done = p;
        }
      });
      if (calls.size === 0) throw new CaseSkip('the agent made no function call for the knowledge-base question');
      for (const [id, c] of calls) {
        if (!c.done) return ctx.fail(`function call ${id} has no arguments.done`, ex);
        ctx.equal(c.args, c.done.arguments, `concatenated argument deltas of ${id} compared with arguments.done`, ex);
      }
      functionCallsWellFormed(
        ctx,
        [...calls.values()].map((c) => c.done!),
        'stream',
        ex,
      );
    },
  },
]);
