// The clauses of the interface (interface.md 1.0.0), numbered by the suite: every field and its default,
// every MUST-like sentence, every row of every table, every "sorted", "only", "never" and "each".
// Each says how the suite checks it: exactly, weakly (and why), or not from outside (and why). Cases
// name the clauses they check (CaseDef.clauses); clauses.ts joins the two (clauseMatrix). This module
// imports nothing, so that every case file can read it.

/** exact: a case fails every implementation that breaks it. weak: a case checks part of it. none: no request can. */
export type CheckKind = 'exact' | 'weak' | 'none';

/**
 * D-106: why a clause is checked only weakly, one of two reasons and no other: the interface leaves a
 * choice open (its words are quoted), or the target cannot provoke what would show the rest.
 */
export type WeakReason = 'open' | 'unprovokable';

export interface Clause {
  /** Stable: `§<section>.<slug>` (`§4.6.stream-true`, `§5.6.missing-key@send-stream`), or `D-n` for a decision. */
  id: string;
  section: string;
  text: string;
  check: CheckKind;
  /** Weak: which of the two reasons. */
  weakBecause?: WeakReason;
  /** Weak because open: the interface's own words that leave the choice open. */
  quote?: string;
  /** Why the check is weak, or why the clause cannot be checked from outside: the written reason. */
  why?: string;
}

const exact = (id: string, text: string): Clause => ({ id, section: sectionOf(id), text, check: 'exact' });
/** The interface leaves a choice open, in the words `quote`: the suite checks what every reading shares. */
const open = (id: string, text: string, quote: string, why: string): Clause => ({
  id,
  section: sectionOf(id),
  text,
  check: 'weak',
  weakBecause: 'open',
  quote,
  why,
});
/** The target cannot provoke what would show the rest (an agent's choice, a failure, a bound it does not give). */
const unprovokable = (id: string, text: string, why: string): Clause => ({
  id,
  section: sectionOf(id),
  text,
  check: 'weak',
  weakBecause: 'unprovokable',
  why,
});
const none = (id: string, text: string, why: string): Clause => ({ id, section: sectionOf(id), text, check: 'none', why });

function sectionOf(id: string): string {
  return /^§([\d.]*\d)/.exec(id)![1]!;
}

/** The app-scoped endpoints, the streaming ones twice (§4.6, §4.7: with `stream: true` as well as without). */
export const ENDPOINTS = [
  ['create', '4.1', 'create conversation'],
  ['list', '4.2', 'list conversations'],
  ['get', '4.3', 'get conversation'],
  ['update', '4.4', 'update conversation'],
  ['delete', '4.5', 'delete conversation'],
  ['send', '4.6', 'send message (JSON)'],
  ['send-stream', '4.6', 'send message with stream: true'],
  ['completion', '4.7', 'create completion (JSON)'],
  ['completion-stream', '4.7', 'create completion with stream: true'],
  ['config', '4.8', 'get app config'],
  ['metrics', '4.9', 'get app metrics'],
] as const;
export type EndpointKey = (typeof ENDPOINTS)[number][0];
export const CONVERSATION_SCOPED: readonly EndpointKey[] = ['get', 'update', 'delete', 'send', 'send-stream'];

function perEndpoint(
  prefix: string,
  text: (name: string) => string,
  keys: readonly EndpointKey[] = ENDPOINTS.map((e) => e[0]),
  how: (key: EndpointKey) => Pick<Clause, 'check' | 'weakBecause' | 'quote' | 'why'> = () => ({ check: 'exact' }),
): Clause[] {
  return ENDPOINTS.filter(([k]) => keys.includes(k)).map(([k, , name]) => ({
    id: `${prefix}@${k}`,
    section: sectionOf(prefix),
    text: text(name),
    ...how(k),
  }));
}

export const CLAUSES: readonly Clause[] = [
  // §1
  exact('§1.app-scoped', "the API is app-scoped: a conversation is reached only under its own app, and only its app's list shows it"),
  exact('§1.json', 'requests and responses have JSON bodies (a JSON content type on every JSON answer, errors included)'),
  exact(
    '§1.json-text',
    'JSON bodies carry Unicode text: a title, external_user_id, metadata, a message and a prompt are taken and given back as sent, byte for byte, whatever their characters',
  ),
  none(
    '§1.https',
    'the API is served over HTTPS',
    "a target may run on plain HTTP for tests (a local server): TLS is the deployment's, not the interface's behaviour",
  ),
  none('§1.server-side', 'the API is meant for server-side use with a secret key', 'a statement about clients, not the service'),
  none('§1.billing', 'completions are billed in credits by token usage', 'no endpoint shows credits'),

  // §2.1 Conversation
  exact('§2.1.id', 'a conversation has a string id, unique: two creations give two ids'),
  exact(
    '§2.1.created_at',
    "created_at is an integer of Unix seconds: the time of the creation, by the Date header of the answer (RFC 9110 §6.6.1), within the request's duration",
  ),
  exact('§2.1.object', 'object is always "conversation"'),
  exact('§2.1.external_user_id', "external_user_id is the caller's identifier set at creation, or absent/null"),
  exact('§2.1.title', 'title is the custom title (a string) or null'),
  open(
    '§2.1.title-generated',
    'without a custom title, a title is generated after the first exchange and appears in generated_title',
    'If none is given at creation, one is auto-generated after the first exchange',
    '"after" has no bound: it is read again until it shows or --settle-timeout passes',
  ),
  open(
    '§2.1.generated_title',
    'generated_title is an object of locale codes (en-ca, fr-ca) to strings',
    'Keys are locale codes (`en-ca`, `fr-ca`); values are strings',
    'the two locales read as examples: any locale-code keys with string values (reference: both, D-8)',
  ),
  exact('§2.1.metadata', 'metadata is the latest snapshot given (at creation or with a message)'),
  exact('§2.1.items', 'the single-conversation read adds items, an array'),
  none(
    '§2.1.item-fields',
    'the fields of each item',
    "not shown: the suite looks for each message's text and each call's id in the items' JSON (reference: D-14)",
  ),

  // §2.2 Message input
  exact('§2.2.content', 'message.content is a required string'),
  exact('§2.2.role-default', 'role defaults to "user": a message without role is accepted'),
  open(
    '§2.2.role-only-user',
    'only role "user" is supported: another role is refused',
    'Which error type and status a malformed or invalid request body produces: not shown.',
    'another role is refused with any 4xx error object (reference: 400 message.role, D-15)',
  ),

  // §2.3 Response
  exact('§2.3.id', 'a Response has a string id (required), its own for each message'),
  exact('§2.3.object', 'object is "response" (its default when absent)'),
  exact('§2.3.created_at', 'created_at is Unix seconds (required): the time of the exchange, as §2.1.created_at'),
  exact('§2.3.conversation_id', 'conversation_id (required) is the conversation the message was sent to'),
  exact('§2.3.output', 'output is an array of output items (default empty)'),
  exact('§2.3.status', 'status is "completed" (default) or "failed"'),

  // §2.4 Output item
  exact('§2.4.type', "an output item's type is message, function_call or data_spec"),
  exact('§2.4.message.role', 'a message item has role, a string or null'),
  exact(
    '§2.4.message.content',
    'a message item has content: an array of parts, or null; each part an object with type; a text part is {type: "text", text: string}',
  ),
  unprovokable(
    '§2.4.function_call.name',
    'a function_call item has name, a string or null',
    'the agent decides whether it calls a function: checked when it does for the probe message on apps.knowledge_base, else the case is skipped, with that reason',
  ),
  unprovokable(
    '§2.4.function_call.arguments',
    'a function_call item has arguments, a string of JSON-encoded arguments or null',
    'as §2.4.function_call.name',
  ),
  unprovokable(
    '§2.4.function_call.call_id',
    'a function_call item has call_id, a string or null; two calls do not share one',
    'as §2.4.function_call.name',
  ),
  unprovokable(
    '§2.4.data_spec.data',
    'a data_spec item\'s data is {type: "patch", patch: {op, path, value}} per RFC 6902',
    'the agent decides whether it answers with a form: checked when it does for the probe form request (each patch one RFC 6902 operation with a JSON Pointer path; what they build is D-22), else the case is skipped',
  ),
  exact('§2.4.data_spec.only-generative-ui', 'data_spec items appear only when generative UI is enabled'),

  // §2.5 Completion
  exact('§2.5.id', "a Completion's id is prefixed cmpl_ (in JSON and in its stream)"),
  exact('§2.5.object', 'object is always "completion"'),
  exact('§2.5.created_at', 'created_at is Unix seconds: the time of the completion, as §2.1.created_at'),
  exact('§2.5.text', 'text is the generated text, a string'),
  exact('§2.5.status', 'status is "completed" or "failed"'),

  // §2.6 list, §2.7 deletion, §2.8 config, §2.9 metrics
  exact('§2.6.object', 'a list has object "list"'),
  exact('§2.6.data', 'data is the current page, an array of Conversations (with the created_at each was created with)'),
  exact('§2.6.first_id', "first_id is the id of the page's first conversation, null when the page is empty"),
  exact('§2.6.last_id', "last_id is the id of the page's last conversation, null when the page is empty"),
  exact('§2.6.has_more', 'has_more says whether conversations exist beyond this page'),
  exact('§2.7.id', "a deletion result's id is the deleted conversation's id"),
  exact('§2.7.object', 'a deletion result\'s object is "conversation"'),
  exact('§2.7.deleted', "a deletion result's deleted is true"),
  exact('§2.8.app_id', "config.app_id is the app's identifier"),
  exact('§2.8.stream', "config.stream says whether streaming is the app's default"),
  exact('§2.8.generative_ui', 'config.generative_ui says whether responses may include data_spec'),
  exact('§2.8.agent.name', 'config.agent.name is a string'),
  exact('§2.8.agent.config', 'config.agent.config has primary_color and secondary_color, both strings'),
  exact('§2.9.total_conversations', 'total_conversations is an integer'),
  exact('§2.9.total_messages', 'total_messages is an integer'),
  exact('§2.9.total_users', 'total_users is an integer'),
  exact(
    '§2.10.ids-opaque',
    'the format and length of app and conversation ids are not shown: the suite assumes none (an unknown id is shaped like a real one)',
  ),

  // §3
  none(
    '§3.response-failed',
    'a Response or Completion that encountered an error has status "failed"',
    'no request makes a healthy agent fail',
  ),
  exact('§3.completed', 'a Response or Completion that finished successfully has status "completed"'),
  exact('§3.in-progress', 'the initial response.created event says status in_progress (conversation and completion streams)'),
  exact('§3.soft-delete.list', 'a soft-deleted conversation is no longer returned in list requests'),
  none(
    '§3.soft-delete.dashboard',
    'the data of a soft-deleted conversation stays accessible from the dashboard',
    'the dashboard is not part of the API (reference: /admin/v1 lists and reads it with its history for the retention period, D-73; test/admin-conversations.test.ts)',
  ),

  // §4.1
  exact('§4.1.optional', 'every field of the create body is optional: {} creates a conversation'),
  exact('§4.1.echo', 'external_user_id, title and metadata given at creation are those of the Conversation answered'),
  none(
    '§4.1.per-user',
    'conversations are linked to external_user_id for per-user retrieval',
    'filtering the list by user is not shown (reference: ?external_user_id=, D-10)',
  ),
  none(
    '§4.1.metadata-context',
    "metadata is injected into the agent's runtime context on every response",
    'what the agent does with it is not observable in a defined way',
  ),
  exact('§4.1.success', 'success is 200 with a Conversation'),
  // §4.2
  exact('§4.2.limit-default', 'limit defaults to 20: a default page holds 20 when more exist'),
  exact('§4.2.limit-range', 'limit may be 1 to 100 (1 and 100 are accepted)'),
  exact('§4.2.after', 'after is a forward cursor: passing last_id as after gives the next page, and a walk meets each conversation once'),
  open(
    '§4.2.before',
    'before is a backward cursor: conversations created before it',
    'Backward cursor; returns conversations created before it',
    'which page of them a limit gives is not said: in asc order it is checked where the text leaves no choice (two precede the cursor) and as "only earlier ones, oldest first"; in desc order the two readings of §4.2 disagree, and it is D-12 only',
  ),
  exact('§4.2.order', 'order is asc or desc by creation time (within a second: the order an implementation keeps, see the readings)'),
  exact('§4.2.order-default', 'order defaults to desc'),
  exact('§4.2.success', 'success is 200 with a Conversation list'),
  none('§4.2.filter', 'filtering the list by external_user_id', 'not shown (reference: D-10)'),
  // §4.3
  exact('§4.3.success', 'success is 200 with the Conversation and items'),
  exact(
    '§4.3.items-complete',
    'items is the complete history of messages and function calls: each user message and each reply item of every exchange',
  ),
  exact('§4.3.items-sorted', 'items are sorted chronologically: each reply after its question, exchange after exchange'),
  open(
    '§4.3.new-empty',
    'the history of a new conversation is what its first exchange adds to',
    'the complete history of messages and function calls, sorted chronologically',
    'nothing says a new history is empty (an agent may open with a greeting): whatever a new conversation holds is the base that each exchange adds to, in order (reference: an empty history, D-14)',
  ),
  // §4.4
  exact('§4.4.title', 'PATCH {title} renames; the change is kept'),
  exact('§4.4.title-null', 'PATCH {title: null} clears the custom title'),
  open(
    '§4.4.only-title',
    'only the custom title can be updated',
    'Only the custom title can be updated.',
    'what becomes of other fields is not said: a PATCH with them may be refused (any 4xx) or leave them as they were (reference: 400, D-13)',
  ),
  exact('§4.4.success', 'success is 200 with the Conversation'),
  // §4.5
  exact('§4.5.success', 'DELETE has no body and answers 200 with the Deletion result'),
  exact('§4.5.soft', 'the delete is soft (§3): the conversation leaves the list'),
  // §4.6
  exact('§4.6.message-required', 'message is required'),
  exact('§4.6.stream-true', 'stream: true gives SSE'),
  exact('§4.6.stream-false', 'stream: false gives one JSON Response, also on an app whose default is streaming'),
  exact('§4.6.stream-default', "stream omitted uses the app's configured default (JSON or SSE)"),
  open(
    '§4.6.stream-null',
    'stream may be null',
    "`true` gives SSE; `false` gives a single JSON response; omitted uses the app's configured default",
    'null is allowed ("boolean or null") but its meaning is not given: a 200 is required, JSON or a stream (reference: the app default, JSON here)',
  ),
  exact('§4.6.metadata-persisted', "metadata sent with a message becomes the conversation's latest metadata"),
  exact('§4.6.metadata-null', 'metadata may be null'),
  none('§4.6.metadata-used', 'metadata is used for the current response', 'what the agent does with it is not observable in a defined way'),
  exact('§4.6.success-json', 'non-streaming success is a Response with a JSON content type'),
  exact('§4.6.success-sse', 'streaming success is text/event-stream with the events of §6'),
  exact('§4.6.errors', 'its errors (401, 403, 404, 429) are error objects, with stream: true as well as without'),
  // §4.7
  exact('§4.7.prompt-required', 'prompt is required'),
  none(
    '§4.7.prompt-instruction',
    'the prompt is only an instruction, never a command that changes agent behaviour',
    'what a model does with a prompt is not observable in a defined way',
  ),
  exact('§4.7.stream-default', 'stream defaults to false: a completion without stream is JSON'),
  exact('§4.7.stream', 'stream: true gives SSE, stream: false JSON'),
  exact('§4.7.knowledge_search', 'knowledge_search (a boolean, default true) is taken, true or false, with or without a knowledge base'),
  none(
    '§4.7.knowledge_search.effect',
    'knowledge_search lets the agent search its knowledge base; it has no effect without one',
    'which tools ran does not show in a completion: its stream carries text events only (rule 2), its JSON only the text',
  ),
  exact('§4.7.fast', 'fast (a boolean, default false) is taken, true or false'),
  none('§4.7.fast.effect', 'fast: true skips the reasoning step for the lowest latency', 'reasoning and latency do not show in an answer'),
  exact('§4.7.metadata', 'metadata (an object) is taken with a completion'),
  none(
    '§4.7.metadata.as-data',
    'metadata is injected as data, never as instructions',
    'what a model does with metadata is not observable in a defined way',
  ),
  exact('§4.7.success', 'success is 200 with a Completion'),
  exact('§4.7.no-conversation', 'a completion creates no conversation'),
  exact('§4.7.independent', 'each completion is independent (its own id)'),
  none(
    '§4.7.no-history',
    'a completion keeps no history',
    "there is no endpoint that would show a completion's history: §4.7.no-conversation is what shows",
  ),
  none(
    '§4.7.only-kb-tool',
    'only knowledge-base search is available as a tool',
    'a completion stream carries only text events (rule 2), so which tools ran does not show',
  ),
  none(
    '§4.7.error-count',
    '"four error bodies are listed for completion, three for" the other endpoints',
    'the interface does not say which: the per-endpoint rows of §5.6 and §7 are checked instead',
  ),
  // §4.8, §4.9
  exact('§4.8.success', 'GET config answers 200 with the App config of that app'),
  exact('§4.9.success', 'GET metrics answers 200 with the App metrics'),
  open(
    '§4.9.conversations',
    'total_conversations counts a created conversation',
    "A client may read an app's configuration and aggregated usage metrics.",
    'when an aggregate takes a change in is not said: read again until it shows (by exactly one) or --settle-timeout passes',
  ),
  open(
    '§4.9.messages',
    'total_messages grows with an exchange',
    '| total_messages | integer |',
    'what counts as a message is not said, nor when the aggregate takes it in: it must grow with an exchange (reference: by the user message and the assistant messages, D-24)',
  ),
  none('§4.9.users', 'total_users counts users', 'what a user is (external_user_id values?) is not shown (reference: D-24)'),

  // §5
  exact('§5.1.bearer', 'every request carries Authorization: Bearer <key>; another scheme is no key'),
  none(
    '§5.2.prefix',
    'the secret key has the prefix sk_live_ and stays server-side',
    "the key is the target's input: the suite does not judge the key it is given",
  ),
  none('§5.3.dashboard', 'keys are created in the dashboard', 'the dashboard is not part of the API'),
  none(
    '§5.5.webhooks',
    'the secret key verifies webhook signatures',
    'webhooks and their signatures are not shown (reference: D-80, capability webhooks)',
  ),
  ...perEndpoint('§5.6.missing-key', (n) => `${n} without a key: 401 invalid_api_key`),
  ...perEndpoint('§5.6.invalid-key', (n) => `${n} with an unknown key: 401 invalid_api_key`),
  ...perEndpoint('§5.6.access-denied', (n) => `${n} on an app of another team: 403 access_denied`).map((c) =>
    CONVERSATION_SCOPED.some((k) => c.id.endsWith(`@${k}`))
      ? {
          ...c,
          text: `${c.text} (exactly on a conversation of that team, created with other_team_api_key; on a made-up id 404 not_found is accepted too)`,
        }
      : c,
  ),
  ...perEndpoint(
    '§5.4.publishable',
    (n) => `${n} with a publishable key is refused`,
    undefined,
    () => ({
      check: 'weak',
      weakBecause: 'open',
      quote: 'It cannot call the REST API or reach sensitive data.',
      why: 'with which error is not said: 401 or 403 (reference: 403 access_denied, code publishable_key, D-6)',
    }),
  ),

  // §6
  exact('§6.selected', 'streaming is selected by stream: true (or the app default for send message)'),
  exact('§6.content-type', 'a stream has content type text/event-stream and ends'),
  open(
    '§6.two-lines',
    'each event is two lines: "event: <type>" and "data: <json payload>"',
    'The reply is either one JSON document or a stream of Server-Sent Events (SSE).',
    'one event line and one data line of a JSON object are required; what any SSE client reads the same stays open: CR LF or CR line ends, ": …" comments, no space after the colon, and the other fields SSE defines (id:, retry:), which set the stream\'s last id and reconnection time without changing an event\'s type or data (reference: exactly the two lines, LF, D-16/D-18)',
  ),
  exact('§6.created.fields', 'response.created carries id, object, status in_progress and, on conversation streams only, conversation_id'),
  exact('§6.delta.fields', 'response.output_text.delta carries type, delta (string), output_index, content_index'),
  exact(
    '§6.done.fields',
    'response.output_text.done carries type, text, output_index, content_index; the deltas of a part concatenate to its text',
  ),
  open(
    '§6.function_call.start',
    'response.function_call.start: the agent started a tool call',
    'Payload of the three `response.function_call...` events: not shown.',
    'a JSON object, and one function call of the JSON output per start (reference: D-16)',
  ),
  open(
    '§6.function_call_arguments.delta',
    'response.function_call_arguments.delta: incremental tool-call arguments',
    'Payload of the three `response.function_call...` events: not shown.',
    'a JSON object (reference: the deltas concatenate to the arguments, D-16)',
  ),
  open(
    '§6.function_call_arguments.done',
    'response.function_call_arguments.done: the complete tool-call arguments',
    'Payload of the three `response.function_call...` events: not shown.',
    'a JSON object (reference: D-16)',
  ),
  unprovokable(
    '§6.data_spec.fields',
    'response.data_spec carries type, data {type: "patch", patch} and output_index, only with generative UI',
    'the agent decides whether it answers with a form: checked when it does for the probe form request, else the case is skipped',
  ),
  exact('§6.completed.fields', 'response.completed carries id (that of response.created) and status completed'),
  none(
    '§6.failed',
    'response.failed: the response encountered an error',
    'its payload is not shown and no request makes a healthy agent fail',
  ),
  exact('§6.rule1', 'rule 1: a stream starts with response.created and ends with one response.completed on success'),
  exact(
    '§6.rule2',
    "rule 2: a completion stream's response.created carries object completion, only text events follow, and it ends with response.completed",
  ),
  unprovokable(
    '§6.rule3',
    'rule 3: with generative UI, data_spec events are interleaved with text; several may build a form; patches follow RFC 6902',
    'the agent decides whether it answers with a form: checked when it does for the probe form request, each patch an RFC 6902 operation with a JSON Pointer path (reference: applied in order they build /form, D-22)',
  ),
  exact('§6.rule3.only-generative-ui', 'rule 3: without generative UI, no data_spec event or item'),
  unprovokable(
    '§6.rule4',
    'rule 4: in JSON mode the same content arrives in output (message, function_call, data_spec items)',
    'one reply cannot be had in both modes, and two replies of an agent may differ: the same message in each mode must give the same kinds of items, in up to 3 tries (reference: the persisted items are the stream, D-14)',
  ),
  exact('§6.each-exchange', 'the rules hold for every exchange of a conversation, the tenth as the first'),

  // §7
  exact('§7.body', 'every error status has the error body, with a JSON content type'),
  exact('§7.body.message', 'error.message is a string (required)'),
  exact('§7.body.type', 'error.type is a string (required): the error type identifier'),
  exact('§7.body.param', 'error.param is a string or null'),
  exact('§7.body.code', 'error.code is a string or null'),
  exact('§7.invalid_api_key', 'invalid_api_key is 401: invalid or missing key'),
  exact('§7.access_denied', 'access_denied is 403: the key has no access to this app'),
  exact('§7.app_inactive', 'app_inactive is 403: the app is disabled'),
  exact('§7.agent_unavailable', 'agent_unavailable is 403: no active agent'),
  exact('§7.not_found', 'not_found is 404: app or conversation not found'),
  exact('§7.rate_limit_exceeded', 'rate_limit_exceeded is 429'),
  none('§7.internal_error', 'internal_error is 500: an unexpected server error', 'no request can provoke it on a healthy server'),
  open(
    '§7.malformed',
    'a malformed or invalid body is refused with an error object',
    'Which error type and status a malformed or invalid request body produces: not shown.',
    'any 4xx error object (reference: D-1)',
  ),
  ...perEndpoint('§7.app-inactive', (n) => `${n} on a disabled app: 403 app_inactive`).map((c) =>
    CONVERSATION_SCOPED.some((k) => c.id.endsWith(`@${k}`))
      ? {
          ...c,
          text: `${c.text} (exactly on a conversation of that app, apps.inactive_conversation; on a made-up id 404 not_found is accepted too)`,
        }
      : c,
  ),
  ...perEndpoint(
    '§7.agent-unavailable',
    (n) => `${n} on an app without an active agent: 403 agent_unavailable`,
    ['send', 'send-stream', 'completion', 'completion-stream'],
    (k) =>
      k.startsWith('send')
        ? {
            check: 'weak',
            weakBecause: 'open',
            quote:
              'Error status codes for the create-conversation, list, get, update, delete, completion, config and metrics endpoints: not shown beyond the error object shape',
            why: 'whether an app without an agent takes a create is not said: where it does, its conversation must answer 403 agent_unavailable; where it refuses, a made-up id is used and 404 not_found is accepted too',
          }
        : { check: 'exact' },
  ),
  ...perEndpoint(
    '§7.unknown-app',
    (n) => `${n} on an app that does not exist: 404 not_found`,
    undefined,
    () => ({
      check: 'weak',
      weakBecause: 'open',
      quote: 'A valid key without access to the app gives 403 `access_denied`.',
      why: 'and §7 says "App or conversation not found" for 404 not_found: both describe an app that does not exist; either is accepted (reference: 404, D-4)',
    }),
  ),
  ...perEndpoint('§7.unknown-conversation', (n) => `${n} of a conversation id that does not exist: 404 not_found`, CONVERSATION_SCOPED),
  ...perEndpoint(
    '§7.other-app-conversation',
    (n) => `${n} of a conversation of another app of the same team, under this app: 404 not_found, nothing changed`,
    CONVERSATION_SCOPED,
  ),
  ...perEndpoint(
    '§7.other-team-conversation',
    (n) => `${n} of a conversation of another team, under its app (403 access_denied) or this one (404 not_found), nothing changed`,
    CONVERSATION_SCOPED,
  ),
  ...perEndpoint('§7.rate-limit', (n) => `${n} past the plan's limit: 429 rate_limit_exceeded, an error object`, ['send', 'send-stream']),

  // §8
  open(
    '§8.metadata@create',
    'metadata of create conversation is at most 16KB',
    '16KB maximum',
    'how "16KB" is counted is not shown: the spec profile reads it as bytes of the metadata\'s JSON, accepts 15,872 bytes (16,000 less 128 for the spaces a serializer may add) and refuses 16,896 (16 KiB and 512 more), ASCII and two-byte characters (reference: 16,384 and 16,385 bytes of compact JSON, D-9)',
  ),
  open('§8.metadata@send', 'metadata of send message is at most 16KB', '16KB maximum', 'as §8.metadata@create'),
  open('§8.metadata@completion', 'metadata of create completion is at most 16KB', '16KB maximum', 'as §8.metadata@create'),
  exact('§8.prompt', 'a prompt is 1 to 32,000 characters: 1 and 32,000 (two-byte ones too) are accepted, 0 and 32,001 refused'),
  open(
    '§8.list-limit',
    'list limit is 1 to 100',
    '1 to 100, default 20',
    'what a limit outside it gets is not said: a 4xx error object or a page of at most 100 (reference: 400, D-12)',
  ),
  exact('§8.rate-limit.send', "send message is rate-limited: past the plan's limit it is refused with 429"),
  none(
    '§8.rate-limit.per-day',
    'limits are enforced per minute and per day, depending on the plan',
    "the values are not shown, and a day's limit cannot be reached in a run",
  ),
  none(
    '§8.rate-limit.others',
    'whether endpoints other than send message are rate-limited',
    "not shown: a 429 on creating the rate-limited app's conversation is taken as an error object and waited out (D-109) (reference: create counts, D-110)",
  ),

  // §9
  exact('§9.v1', 'the base URL ends in /v1 and serves the API'),
  none('§9.version', 'the interface is at version 1.0.0', 'no endpoint reports a version'),

  // The project's decisions, checked only by profile reference.
  ...decisionClauses(),
  // The widget's decisions (docs/widget.md, Parley's extension), with target key widget.
  ...widgetDecisionClauses(),
  // The webhooks' decisions (docs/webhooks.md, Parley's extension), with target key admin.
  ...webhookDecisionClauses(),
  // The scenarios' decisions (docs/scenarios.md, Parley's extension), capability scenarios.
  ...scenarioDecisionClauses(),
];

/** A decision's clause: checked exactly, or weakly because the target cannot provoke the rest (`why`), or not at all (`none`). */
type DecisionRow = [number, string, 'exact' | 'weak' | 'none', string?];

function decisionClause([n, text, check, why]: DecisionRow): Clause {
  return {
    id: `D-${n}`,
    section: `D-${n}`,
    text,
    check,
    ...(check === 'weak' ? { weakBecause: 'unprovokable' as const } : {}),
    ...(why ? { why } : {}),
  };
}

function decisionClauses(): Clause[] {
  const d: DecisionRow[] = [
    [1, 'a bad body: 400 invalid_request_error with param and code', 'exact'],
    [2, 'a body over 1 MiB: 413; a non-JSON content type: 415', 'exact'],
    [3, 'unknown path 404; wrong method 405 with Allow', 'exact'],
    [
      4,
      'order of checks: 401, then 404 unknown app / 403 other team, 403 app_inactive, 403 agent_unavailable, 429, 400, 404',
      'weak',
      'each step against the next where one request can break both (429 before 400 included); agent_unavailable against 429 would need an app without an agent that is also rate-limited, which no target names',
    ],
    [
      5,
      '500 internal_error with no internals, and x-request-id',
      'weak',
      'no request provokes a 500 of a healthy server: x-request-id only',
    ],
    [
      6,
      'key formats, a publishable key is 403 code publishable_key',
      'weak',
      "how keys are stored and compared shows in no answer: the 401s and the publishable key's 403 only",
    ],
    [7, 'id prefixes; creation order breaks ties within a second', 'exact'],
    [8, 'title null until a custom one; generated_title en-ca and fr-ca after the first exchange, {} before; 1 to 256 characters', 'exact'],
    [9, 'metadata {} by default, replaced or kept on send, 16,384 bytes of compact JSON', 'exact'],
    [10, 'external_user_id null by default, 1 to 256 characters, a list filter', 'exact'],
    [11, 'a soft-deleted conversation is 404 to get, update, send, delete; still a cursor', 'exact'],
    [12, "pagination in the list's order; both cursors, an unknown cursor, a limit out of range: 400", 'exact'],
    [13, 'PATCH takes exactly {title}', 'exact'],
    [14, 'item shape; items are the user message then the output, with response_id', 'exact'],
    [15, 'message content 1 to 32,000 characters, role user only', 'exact'],
    [
      16,
      'SSE payloads carry type and sequence_number; function call and failed payloads (a cancelled reply ends with response.failed)',
      'exact',
    ],
    [17, 'errors before the first event are plain JSON errors', 'exact'],
    [18, 'keep-alive comments; Cache-Control: no-cache', 'exact'],
    [
      19,
      'a disconnect aborts the reply, kept as failed (revised by D-34: past the cap of detached replies only, and completions)',
      'weak',
      'the cap is a fixture the suite does not know (D-34 is checked instead): a completion whose client left, seen stopped by its completion.failed event',
    ],
    [20, 'output_index and content_index', 'exact'],
    [21, 'the service runs function calls; knowledge_search {"query"}', 'exact'],
    [22, 'data_spec patches build /form from {}', 'exact'],
    [
      23,
      'rate limits: Retry-After in seconds, no later than the reset; x-ratelimit-* on every counted request and the 429, remaining down by one; a refusal changes nothing (which requests count: D-110)',
      'exact',
    ],
    [24, 'metrics: deleted conversations count, messages are user and assistant items, users are distinct external_user_id', 'exact'],
  ];
  // Reliability (docs/reliability.md).
  d.push(
    [
      27,
      'a storage quota per plan: a create past it, a message once it is reached, 429 storage_quota_exceeded, no Retry-After, x-should-retry: false; a soft delete frees it',
      'exact',
    ],
    [
      29,
      "a conversation's history is bounded (4 MiB, or its plan's): then 400 conversation_too_large, param conversation_id; it can still be read",
      'exact',
    ],
    [
      110,
      'create conversation counts against the plan like send message and completion (revises D-23): it carries the x-ratelimit-* headers, and past the limit it is 429',
      'exact',
    ],
  );
  // Resumable responses, an extension (docs/responses.md): checked by profile reference only.
  d.push(
    [
      30,
      'a keyed retry (Idempotency-Key, docs/reliability.md) is replayed with Idempotent-Replayed: true and runs nothing twice, another body under the key is 422; a keyed retry of a cut send message continues the same response',
      'weak',
      "the 409 of a key still in use and the 24 h expiry need a create or completion slower than a run's requests, or a day: replays, reuse, malformed keys and the cut stream",
    ],
    [31, 'send message names its response in the Parley-Response-Id header', 'exact'],
    [
      32,
      'look-up (in_progress, then as ended) and resume: the events after N as first sent, with id lines, Last-Event-ID; 404 for unknown, other app, other team',
      'exact',
    ],
    [
      33,
      'cancel: failed with code cancelled, partial output kept, saved before the answer; after it no text, and open streams end with response.failed within 2 s; a finished one unchanged',
      'exact',
    ],
    [
      34,
      "a disconnect no longer stops the reply (revises D-19; revised by D-92: the widget's replies have a cap of their own), within the app's max_duration_seconds and max_detached",
      'weak',
      "the bounds are the app's fixtures, which no target gives: a reply its client left runs on to its end",
    ],
    [
      35,
      'a response is begun in the store before its first byte',
      'none',
      "storage does not show; D-32's resume from -1 after a cut before the first event shows its effect",
    ],
    [36, 'events resumable for an hour after the end, then 410 response_events_expired', 'none', 'an hour cannot pass in a run'],
    [
      37,
      'a message while a reply runs waits in line (8 at most), then 409 conversation_busy naming it',
      'weak',
      'filling the line means eight replies waiting behind a running one, each then running to its end, longer than a run may take: the wait of two at once only',
    ],
    [38, 'a shutdown or a crash saves running replies failed, code interrupted', 'none', 'the suite cannot stop the target'],
    [39, "items of a response that did not complete carry status incomplete (revises D-14); a completed one's none", 'exact'],
  );
  // Reliability (docs/reliability.md).
  d.push([
    92,
    'the widget cannot starve the REST API (revises D-27, D-34, D-52): its own share of the storage quota, its own stream and detached caps; every widget request counted per visitor and address, creates charged to its budget, the budget divided per visitor and per address, a refused request not charged',
    'none',
    "the widget's caps and shares are fixtures the suite does not know, and reaching them takes a quota or a day's budget (test/proof/widget-starve.test.ts proves them on the reference)",
  ]);
  return d.map(decisionClause);
}

/** The messenger widget's decisions (docs/widget.md) that the REFERENCE cases of §5.4 check. */
function widgetDecisionClauses(): Clause[] {
  const d: DecisionRow[] = [
    [
      45,
      'the widget API has its own path space: a publishable key on any REST path is 403 publishable_key, a visitor token there 401 invalid_api_key; the widget refuses the secret key',
      'exact',
    ],
    [
      48,
      "a visitor owns their conversations: another visitor's, and one created through the REST API, answer 404 like an unknown id and stay as they were; the publishable key alone opens only a visitor session",
      'exact',
    ],
    [
      49,
      "visitor tokens: missing, malformed or forged (alg none, another key, a changed payload) is 401 invalid_visitor_token; expired 401 visitor_token_expired, renewed by previous_token as the same visitor; another app's 403 access_denied",
      'exact',
    ],
    [
      50,
      "verified identity: HS256 with the app's identity secret sets external_user_id and the conversation's metadata, the same sub the same visitor; forged or unsigned is 403 invalid_identity, older than 10 minutes or dated ahead 403 identity_expired, param identity",
      'weak',
      "that the identity's metadata reaches the agent shows in no answer",
    ],
    [51, 'what a browser may send: external_user_id and metadata are 400 unknown_parameter on the widget API', 'exact'],
    [
      53,
      'origins: a listed origin gets its CORS answer (preflight 204 with methods, headers, max age; Access-Control-Allow-Origin, Vary: Origin); any other, null included, 403 origin_not_allowed with no CORS header; no Origin is not refused',
      'weak',
      "the server's own origin, allowed while its playground is on, is not in the target",
    ],
    [
      54,
      'widget order of checks: origin (403) before the credential (401); the credential before the conversation (404)',
      'weak',
      "the other steps need apps no target names: one without a widget, another team's with one",
    ],
    [55, 'the script /widget.js is JavaScript that any page may load (Cross-Origin-Resource-Policy: cross-origin)', 'exact'],
  ];
  return d.map(decisionClause);
}

/** The webhooks' decisions (docs/webhooks.md) that the REFERENCE cases of §5.5 check. */
function webhookDecisionClauses(): Clause[] {
  const d: DecisionRow[] = [
    [
      80,
      'a delivery is a POST of the event with webhook-id, webhook-timestamp and webhook-signature: v1 signatures under the secret derived from the secret key',
      'weak',
      "a rolled key's successor's signature needs a roll the target does not allow: the one of api_key only",
    ],
    [
      81,
      'endpoints per app on the admin surface: url, the events asked for (or *), enabled and disabled_reason; an endpoint gets only what it asked for',
      'weak',
      'the roles (a viewer reads, another team gets 404) and the audit need members the target does not give: an admin registers, reads and deletes',
    ],
    [
      82,
      "an endpoint may not point into Parley's own network (loopback only in local development, D-170)",
      'none',
      'a refusal would need an address the suite must not connect to, and the policy depends on where the target listens',
    ],
    [
      83,
      'events {id evt_ = webhook-id, object, type, created_at, app_id, data}: data the resource as the API shows it, cut to {id, object, url} past 20,480 bytes',
      'weak',
      "response.failed needs a failure the target cannot be asked for, conversation.restored a restore on the admin surface, which the interface does not have, and a payload past 20,480 bytes a resource larger than the limits allow: the five other types, each with exactly the API's fields and one event per change, and completion.failed of a completion whose client left",
    ],
    [84, 'an event is written with the change it reports, never lost by a crash', 'none', 'the suite cannot stop the target'],
    [
      85,
      'at least once: a failed attempt is retried on the schedule with the same webhook-id, a new timestamp and signatures',
      'weak',
      'the schedule is a setting of the target: one retry after a 500, within --settle-timeout',
    ],
    [
      86,
      'a 410 disables the endpoint at once (gone), its events recorded skipped; failing for 5 days disables it (failing)',
      'weak',
      'five days cannot pass in a run: the 410 only',
    ],
    [
      87,
      'each attempt is recorded: the delivery log per endpoint and per event; redeliver; retention',
      'weak',
      'redelivery and retention are not exercised: the log of a retried, a skipped and a filtered delivery',
    ],
    [88, 'the CLI manages endpoints and listens', 'none', 'the CLI is not part of an implementation'],
    [
      67,
      'a sign-in answers the member, the team and a CSRF token and sets the session cookie HttpOnly, SameSite=Strict, Path=/ (Secure over TLS); sign-out ends the session',
      'weak',
      "the idle and 7-day expiries cannot pass in a run, and the audit needs the audit log's reader: the sign-in, its cookie, the session read and refused after sign-out",
    ],
    [
      115,
      'an endpoint is changed with PATCH, which answers it as changed; POST on its path is a deprecated alias',
      'weak',
      'the deprecated alias is left alone: PATCH of the description and of the events',
    ],
    [89, 'the CLI prints the signing secret and verifies a saved delivery', 'none', 'the CLI is not part of an implementation'],
    [
      150,
      'an endpoint is signed with the key it was registered for (signing_key_id, shown with its state), whatever keys are made later; a revoked or expired key disables it',
      'weak',
      'revoking or rolling needs keys the target does not give: the endpoint registered for api_key shows it and is signed with it',
    ],
  ];
  return d.map(decisionClause);
}

function scenarioDecisionClauses(): Clause[] {
  const d: DecisionRow[] = [
    [
      120,
      'a Parley-Scenario header shapes only the request that carries it; an unknown directive or a bad value is 400 invalid_value naming it',
      'weak',
      "the suite sends one directive, drop-after, to cut a stream; the grammar and its refusals are checked by Parley's own tests",
    ],
    [
      121,
      'a scripted status is answered before anything is counted, charged or stored',
      'none',
      'counts and credits are not readable by a target',
    ],
    [
      122,
      'scenarios are on by default only on loopback without a public URL; off, a scenario is 400 scenarios_disabled',
      'none',
      'depends on how the target was started',
    ],
    [123, 'a directive where it cannot act is 400 invalid_value', 'none', 'the suite sends a scenario only where it acts'],
    [
      124,
      'drop-after cuts the connection after the n-th event; the reply runs on, and a resume from the last event seen gives the rest exactly once',
      'weak',
      "drop-after only: the other directives (reset, stall, malformed, duplicate, pacing, fail-after) are checked by Parley's own tests",
    ],
  ];
  return d.map(decisionClause);
}

const BY_ID = new Map(CLAUSES.map((c) => [c.id, c]));

export function clause(id: string): Clause | undefined {
  return BY_ID.get(id);
}

/** The clause ids of one group of per-endpoint rows (`§5.6.missing-key` → every `§5.6.missing-key@…`). */
export function rows(prefix: string, keys?: readonly EndpointKey[]): string[] {
  return CLAUSES.filter((c) => c.id.startsWith(`${prefix}@`) && (!keys || keys.includes(c.id.slice(prefix.length + 1) as EndpointKey))).map(
    (c) => c.id,
  );
}
