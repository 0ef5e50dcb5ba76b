// The widget's side of the widget API (docs/widget.md): a visitor session kept in localStorage, its
// renewal, and a reply read as a stream of server-sent events.

export interface WidgetError {
  status: number;
  type: string;
  code: string | null;
  message: string;
}

export class WidgetApiError extends Error {
  constructor(readonly error: WidgetError) {
    super(error.message);
  }
}

export interface AppConfig {
  app_id: string;
  generative_ui: boolean;
  agent: { name: string; config: { primary_color: string; secondary_color: string } };
}

export interface Item {
  id: string;
  type: 'message' | 'function_call' | 'data_spec';
  role?: string | null;
  content?: Array<{ type: string; text?: string }> | null;
  name?: string | null;
  data?: { type: 'patch'; patch: { op: string; path: string; value?: unknown; from?: string } };
  response_id?: string;
}

export interface StreamEvent {
  event: string;
  data: Record<string, unknown> & { sequence_number?: number };
}

interface Saved {
  token?: string;
  conversationId?: string;
}

export interface ClientOptions {
  baseUrl: string;
  appId: string;
  publishableKey: string;
  /** A host-signed identity (D-50), passed through as is. */
  identity?: string;
  /** D-120: a scenario (docs/scenarios.md) sent with each message, so that a page's test meets the failures it chose. */
  scenario?: string;
}

export class WidgetClient {
  private saved: Saved;
  private readonly storageKey: string;

  constructor(private readonly o: ClientOptions) {
    // One visitor per widget server and app, whoever the page is (D-57).
    this.storageKey = `parley-widget:${o.baseUrl}:${o.appId}`;
    this.saved = this.load();
  }

  get conversationId(): string | undefined {
    return this.saved.conversationId;
  }

  forgetConversation(): void {
    delete this.saved.conversationId;
    this.save();
  }

  /** D-49: a fresh token, the same visitor when the last one is still renewable. */
  async session(): Promise<void> {
    const renewal = this.saved.token ? { previous_token: this.saved.token } : undefined;
    let r: Response;
    try {
      r = await this.request('POST', `/visitors`, this.o.identity ? { identity: this.o.identity } : (renewal ?? {}), this.o.publishableKey);
    } catch (err) {
      // The page's identity was signed minutes ago and the tab stayed open: the last token renews it.
      if (!(this.o.identity && renewal && err instanceof WidgetApiError && err.error.code === 'identity_expired')) throw err;
      r = await this.request('POST', `/visitors`, renewal, this.o.publishableKey);
    }
    const session = (await r.json()) as { token: string; visitor_id: string };
    // An identity names another visitor than the one saved: their conversation is not this one's.
    if (this.saved.token && this.o.identity && visitorOf(this.saved.token) !== session.visitor_id) delete this.saved.conversationId;
    this.saved.token = session.token;
    this.save();
  }

  async config(): Promise<AppConfig> {
    return (await this.call('GET', '/config')).json() as Promise<AppConfig>;
  }

  async conversation(): Promise<{ id: string; items: Item[] } | null> {
    const id = this.saved.conversationId;
    if (!id) return null;
    try {
      return (await (await this.call('GET', `/conversations/${encodeURIComponent(id)}`)).json()) as { id: string; items: Item[] };
    } catch (err) {
      if (err instanceof WidgetApiError && err.error.status === 404) {
        this.forgetConversation();
        return null;
      }
      throw err;
    }
  }

  /** The reply under way (its `Parley-Response-Id`), for a cancel; undefined between replies. */
  replying: string | undefined;

  /**
   * Sends a user turn and yields the reply's events as they arrive. A stream that drops (a network
   * change, a proxy's timeout) is resumed from the last event seen (docs/responses.md, D-32), a few
   * times; a stream the visitor stopped (`signal`) is not.
   */
  async *send(content: string, signal: AbortSignal): AsyncGenerator<StreamEvent> {
    if (!this.saved.conversationId) {
      const conv = (await (await this.call('POST', '/conversations', {})).json()) as { id: string };
      this.saved.conversationId = conv.id;
      this.save();
    }
    let res = await this.call(
      'POST',
      `/conversations/${encodeURIComponent(this.saved.conversationId!)}`,
      { message: { content }, stream: true },
      signal,
      this.o.scenario ? { 'parley-scenario': this.o.scenario } : {},
    );
    const id = res.headers.get('parley-response-id') ?? undefined;
    this.replying = id;
    let last = -1;
    try {
      for (let resumes = 0; ; resumes++) {
        try {
          for await (const e of readEvents(res.body!)) {
            const n = e.data.sequence_number;
            // D-16: an event whose number was seen (sent twice, or a resume's overlap) is shown once.
            if (typeof n === 'number') {
              if (n <= last) continue;
              last = n;
            }
            yield e;
            if (e.event === 'response.completed' || e.event === 'response.failed') return;
          }
          throw new Error('The reply was cut off.');
        } catch (err) {
          if (signal.aborted || id === undefined || resumes >= 3) throw err;
        }
        res = await this.call('GET', `/responses/${encodeURIComponent(id)}/events?starting_after=${last}`, undefined, signal);
      }
    } finally {
      this.replying = undefined;
    }
  }

  /** Stops the reply under way (D-33): its stream then ends with `response.failed`, code `cancelled`. */
  async cancel(): Promise<void> {
    if (this.replying === undefined) throw new Error('no reply to cancel');
    await this.call('POST', `/responses/${encodeURIComponent(this.replying)}/cancel`, {});
  }

  /** A call with the visitor token; an expired one is renewed once (D-49). */
  private async call(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    extra?: Record<string, string>,
  ): Promise<Response> {
    if (!this.saved.token) await this.session();
    try {
      return await this.request(method, path, body, this.saved.token!, signal, extra);
    } catch (err) {
      if (!(err instanceof WidgetApiError) || err.error.status !== 401) throw err;
      await this.session();
      return this.request(method, path, body, this.saved.token!, signal, extra);
    }
  }

  private async request(
    method: string,
    path: string,
    body: unknown,
    credential: string,
    signal?: AbortSignal,
    extra: Record<string, string> = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { ...extra, authorization: `Bearer ${credential}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${this.o.baseUrl}/widget/v1/apps/${encodeURIComponent(this.o.appId)}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      credentials: 'omit',
    });
    if (!res.ok) {
      let e: Partial<WidgetError> = {};
      try {
        e = ((await res.json()) as { error: WidgetError }).error;
      } catch {
        // Not our error object (a proxy's page): the status says enough.
      }
      throw new WidgetApiError({
        status: res.status,
        type: e.type ?? 'http_error',
        code: e.code ?? null,
        message: e.message ?? `HTTP ${res.status}`,
      });
    }
    return res;
  }

  private load(): Saved {
    try {
      const v = JSON.parse(localStorage.getItem(this.storageKey) ?? '{}') as Saved;
      return typeof v === 'object' && v !== null ? v : {};
    } catch {
      return {}; // storage blocked or damaged: a visitor for this page view only
    }
  }

  private save(): void {
    try {
      localStorage.setItem(this.storageKey, JSON.stringify(this.saved));
    } catch {
      // storage blocked (private mode, a sandboxed frame): the conversation lasts as long as the page
    }
  }
}

function visitorOf(token: string): string | undefined {
  try {
    return (JSON.parse(atob(token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/'))) as { sub?: string }).sub;
  } catch {
    return undefined;
  }
}

/**
 * Server-sent events (one `event:` and one `data:` line each, D-16), comments skipped (D-18), and a
 * frame whose data is not JSON skipped too: a garbled frame is not the end of the reply.
 */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let end: number;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data += line.slice(5).trimStart();
      }
      if (!data) continue;
      let parsed: StreamEvent['data'];
      try {
        parsed = JSON.parse(data) as StreamEvent['data'];
      } catch {
        continue;
      }
      yield { event, data: parsed };
    }
  }
}
