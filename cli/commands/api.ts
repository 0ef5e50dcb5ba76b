// `parley api METHOD PATH`: any request, as `gh api` and httpie make it (D-61). The key comes from the
// flags, the environment or the profile; the answer is printed as it comes, streams included.
import fs from 'node:fs/promises';
import { Command } from 'commander';
import { createParser } from 'eventsource-parser';
import { InvalidResponseError } from '../client.ts';
import type { Session } from '../context.ts';
import { FollowedCursors } from '../core/error.ts';
import { isEventStream, readBody } from '../core/response.ts';
import { ndjsonLine, oneLine, readStdin, UsageError } from '../io.ts';

const METHODS = new Set(['GET', 'POST', 'PATCH', 'PUT', 'DELETE', 'HEAD', 'OPTIONS']);

type Fields = Record<string, unknown>;

/** `-F` values: true, false, null and numbers as JSON, `@file` (`@-`: stdin) as the file's text, else the string. */
async function typedValue(value: string, stdin: NodeJS.ReadableStream): Promise<unknown> {
  if (value === 'true') return true;
  if (value === 'false') return false;
  if (value === 'null') return null;
  if (/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(value)) return Number(value);
  if (value.startsWith('@')) {
    const file = value.slice(1);
    try {
      // One trailing newline is how files end; it is not part of the value.
      return (file === '-' ? await readStdin(stdin) : await fs.readFile(file, 'utf8')).replace(/\r?\n$/, '');
    } catch (err) {
      throw new UsageError(`-F: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  return value;
}

/** `message[content]=hi` sets body.message.content (gh api's nesting); `tags[]=a` appends to an array. */
export function setField(target: Fields, key: string, value: unknown): void {
  const m = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
  if (!m) throw new UsageError(`field name ${JSON.stringify(key)} must look like name, name[sub] or name[]`);
  const path = [m[1]!, ...[...m[2]!.matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1]!)];
  let node: Record<string, unknown> | unknown[] = target;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i]!;
    const last = i === path.length - 1;
    if (seg === '') {
      if (!Array.isArray(node)) throw new UsageError(`field ${key}: [] must follow an array`);
      if (last) node.push(value);
      else node.push((node = {}) as never);
      continue;
    }
    if (Array.isArray(node)) throw new UsageError(`field ${key}: cannot name a key inside an array`);
    if (last) {
      node[seg] = value;
      break;
    }
    const next: unknown = node[seg] ?? (path[i + 1] === '' ? [] : {});
    if (typeof next !== 'object' || next === null) throw new UsageError(`field ${key}: ${seg} is already a value`);
    node = node[seg] = next as Record<string, unknown> | unknown[];
  }
}

function splitField(flag: string, text: string): [string, string] {
  const i = text.indexOf('=');
  if (i <= 0) throw new UsageError(`${flag} takes key=value (got ${JSON.stringify(text)})`);
  return [text.slice(0, i), text.slice(i + 1)];
}

const collect = (v: string, all: string[] = []) => [...all, v];

export function apiCommand(session: Session): Command {
  const out = session.out;
  return new Command('api')
    .description('make any request to the API and print its answer (as gh api and httpie do)')
    .argument('<method>', 'GET, POST, PATCH, DELETE, …')
    .argument('<path>', 'below the base URL, e.g. /apps/{app}/conversations ({app} is the active app)')
    .option('-f, --field <key=value>', 'a string field (repeatable); name[sub]=v nests', collect)
    .option('-F, --typed-field <key=value>', 'a typed field: true, false, null, numbers, @file (@- for stdin), else a string', collect)
    .option('-H, --header <Name: value>', 'a request header, e.g. "Idempotency-Key: 6f1c…" (repeatable)', collect)
    .option('--input <file|->', 'the request body, as is, from a file or stdin (-)')
    .option('--paginate', 'follow a list to its end (has_more, last_id as after) and print one merged list')
    .option('-i, --include', 'print the status line and headers (to stderr) before the body')
    .addHelpText(
      'after',
      `
Fields (-f, -F) go in the query string of GET, HEAD and DELETE, and in a JSON body otherwise.
The answer's body is printed as it comes: JSON as the server sent it, an event stream live
(its SSE text, or with --json one event payload per line). A non-2xx answer exits 1, naming
its request id; with --json its error object is printed on stdout too.
--paginate prints one list: {"object":"list","data":[every item],"has_more":false,…}.

Examples:
  parley api GET /apps/{app}/conversations -f limit=5
  parley api POST /apps/{app}/conversations -f title=Support -F metadata[vip]=true
  parley api POST /apps/{app}/conversations/conv_abc123 -f message[role]=user -f message[content]=hi -F stream=true
  parley api POST /apps/{app}/completions --input body.json -H "Idempotency-Key: $(uuidgen)"
  parley api GET /apps/{app}/conversations --paginate | jq '.data | length'
`,
    )
    .action(
      async (
        methodArg: string,
        pathArg: string,
        opts: { field?: string[]; typedField?: string[]; header?: string[]; input?: string; paginate?: boolean; include?: boolean },
        cmd: Command,
      ) => {
        const method = methodArg.toUpperCase();
        if (!METHODS.has(method)) throw new UsageError(`unknown method ${JSON.stringify(methodArg)}: use ${[...METHODS].join(', ')}`);
        const needApp = pathArg.includes('{app}');
        const { client, g } = session.client(cmd, { needApp });
        const stdin = session.io.stdin;
        let path = pathArg.replaceAll('{app}', encodeURIComponent(g.app ?? ''));
        if (!path.startsWith('/')) path = `/${path}`;

        const fields: Fields = {};
        for (const f of opts.field ?? []) setField(fields, ...splitField('-f', f));
        for (const f of opts.typedField ?? []) {
          const [k, v] = splitField('-F', f);
          setField(fields, k, await typedValue(v, stdin));
        }
        const headers: Record<string, string> = {};
        for (const h of opts.header ?? []) {
          const i = h.indexOf(':');
          if (i <= 0) throw new UsageError(`-H takes "Name: value" (got ${JSON.stringify(h)})`);
          const name = h.slice(0, i).trim().toLowerCase();
          if (name === 'authorization')
            throw new UsageError('-H authorization: the key comes from --api-key, PARLEY_API_KEY or the profile');
          headers[name] = h.slice(i + 1).trim();
        }

        const inQuery = method === 'GET' || method === 'HEAD' || method === 'DELETE';
        const hasFields = Object.keys(fields).length > 0;
        if (opts.input !== undefined && hasFields && !inQuery)
          throw new UsageError('give the body either as --input or as fields, not both');
        let rawBody: string | undefined;
        if (opts.input !== undefined) {
          try {
            rawBody = opts.input === '-' ? await readStdin(stdin) : await fs.readFile(opts.input, 'utf8');
          } catch (err) {
            throw new UsageError(`--input: cannot read ${opts.input}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
          }
        }
        const query: Record<string, string> = {};
        if (inQuery) for (const [k, v] of Object.entries(fields)) query[k] = typeof v === 'string' ? v : JSON.stringify(v);
        const body = !inQuery && hasFields ? fields : undefined;

        if (opts.paginate) {
          if (method !== 'GET') throw new UsageError('--paginate follows lists: it needs GET');
          // D-61: one merged list, the shape of a page, so that the same jq filter reads one page or all.
          const items: unknown[] = [];
          const followed = new FollowedCursors();
          let q = { ...query };
          let first: Record<string, unknown> | undefined;
          for (;;) {
            const page = await client.request({ method, path, query: q, headers });
            const list = page.data as { data?: unknown[]; has_more?: boolean; last_id?: string | null };
            if (typeof list !== 'object' || list === null || !Array.isArray(list.data))
              throw new InvalidResponseError(page.url, '--paginate: the answer is not a list (no data array)', page.raw);
            first ??= list as Record<string, unknown>;
            items.push(...list.data);
            const lastItem = list.data.at(-1) as { id?: string } | undefined;
            const cursor = list.last_id ?? lastItem?.id;
            if (!list.has_more || list.data.length === 0 || !cursor) break;
            q = { ...q, after: followed.follow(cursor, page.url) };
          }
          const ids = items.map((i) => (i as { id?: unknown })?.id).filter((id) => typeof id === 'string');
          out.line(JSON.stringify({ ...first, data: items, first_id: ids[0] ?? null, last_id: ids.at(-1) ?? null, has_more: false }));
          return;
        }

        const res = await client.open({ method, path, query, headers, body, rawBody });
        if (opts.include) {
          out.note(`HTTP ${res.status}`);
          for (const [k, v] of Object.entries(res.headers)) out.note(`${k}: ${v}`);
        }
        if (!isEventStream(res.headers)) {
          const raw = await readBody(res);
          if (raw === '') return;
          // The server's bytes; a multi-line JSON body becomes one line only with --json (NDJSON).
          if (g.json) {
            try {
              return out.line(oneLine(raw));
            } catch {
              // Not JSON: printed as it is.
            }
          }
          out.out(raw);
          out.endLine();
          return;
        }
        // An event stream, live: each chunk as it arrives, or with --json each event's payload as one line.
        const decoder = new TextDecoder();
        const parser = createParser({
          onEvent: (m) => {
            try {
              out.line(ndjsonLine(m.event ?? 'message', m.data));
            } catch {
              // An event whose data is not JSON has no NDJSON line.
            }
          },
        });
        try {
          for await (const chunk of res.body) {
            res.deadline.refresh();
            const text = decoder.decode(chunk as Uint8Array, { stream: true });
            if (g.json) parser.feed(text);
            else out.out(text);
          }
        } catch (err) {
          throw res.networkError(err);
        } finally {
          res.deadline.clear();
          if (!res.body.readableEnded) res.body.destroy();
        }
        out.endLine();
      },
    );
}
