// Parley's messenger widget (docs/widget.md): one script, embedded with one tag,
//   <script src="https://parley.example/widget.js" data-app-id="app_demo" data-publishable-key="pk_live_…" async></script>
// It draws a launcher and a chat panel in a shadow root, themed from the app's config, streams
// replies, shows tool calls as a status line, renders generative-UI forms, and keeps the visitor's
// conversation across reloads. Everything the agent says is set as text, never parsed as HTML.
import { WidgetApiError, WidgetClient, type AppConfig, type ClientOptions, type Item, type StreamEvent } from './client.ts';
import { applyPatch, formOf, holdSubmit, markSubmitted, renderForm, submissionText, SUBMISSION_HEADER, type FormSpec } from './form.ts';
import { BASE_CSS, sheet, themeCss } from './styles.ts';

export interface MountOptions extends Pick<ClientOptions, 'scenario'> {
  appId: string;
  publishableKey: string;
  /** The Parley server; default: where widget.js came from. */
  baseUrl?: string;
  /** A host-signed identity (D-50). */
  identity?: string;
  /** Draw the panel inside this element, always open, with no launcher (the playground). */
  container?: HTMLElement;
}

export interface MountedWidget {
  /** The host element: it dispatches `parley:event` (every stream event) and `parley:form` (the form document). */
  element: HTMLElement;
  open(): void;
  destroy(): void;
}

const STATUS: Record<string, [string, string]> = {
  knowledge_search: ['Searching the knowledge base…', 'Searched the knowledge base'],
};
const statusOf = (name: string, done: boolean) => STATUS[name]?.[done ? 1 : 0] ?? (done ? `Used ${name}` : `Using ${name}…`);

const el = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Partial<HTMLElementTagNameMap[K]> = {},
  ...children: Node[]
): HTMLElementTagNameMap[K] => {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
};

let mounted = 0;

class Widget implements MountedWidget {
  readonly element: HTMLElement;
  private readonly root: ShadowRoot;
  private readonly client: WidgetClient;
  private readonly launcher: HTMLButtonElement;
  private readonly panel: HTMLElement;
  private readonly title: HTMLHeadingElement;
  private readonly log: HTMLElement;
  private readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private agentName = 'Assistant';
  private busy: AbortController | undefined;
  private readonly ready: Promise<void>;
  private doc: Record<string, unknown> = {};
  private liveForm: HTMLFormElement | undefined;

  constructor(private readonly o: MountOptions & { baseUrl: string }) {
    const n = ++mounted;
    this.client = new WidgetClient(o);
    // A tag of its own: host rules aimed at div or section never match the host element.
    this.element = document.createElement('parley-widget');
    this.element.className = 'parley-widget-host';
    if (o.container) this.element.dataset.inline = '';
    this.root = this.element.attachShadow({ mode: 'open' });
    this.root.adoptedStyleSheets = [sheet(BASE_CSS), sheet(themeCss('', ''))];

    const panelId = `pw-panel-${n}`;
    this.launcher = el('button', { type: 'button', className: 'launcher', textContent: 'Chat' });
    this.launcher.setAttribute('aria-expanded', 'false');
    this.launcher.setAttribute('aria-controls', panelId);
    this.launcher.addEventListener('click', () => (this.panel.hidden ? this.open() : this.close()));

    this.title = el('h2', { id: `pw-title-${n}`, textContent: this.agentName });
    const newChat = el('button', { type: 'button', textContent: 'New chat' });
    newChat.addEventListener('click', () => this.newConversation());
    const header = el('header', {}, this.title, newChat);
    if (!o.container) {
      const close = el('button', { type: 'button', textContent: 'Close' });
      close.setAttribute('aria-label', 'Close chat');
      close.addEventListener('click', () => this.close());
      header.append(close);
    }
    this.log = el('div', { className: 'log' });
    this.log.setAttribute('role', 'log');
    this.log.setAttribute('aria-live', 'polite');
    this.log.setAttribute('aria-label', 'Conversation');
    this.log.tabIndex = 0;

    const inputId = `pw-input-${n}`;
    this.input = el('textarea', { id: inputId, rows: 1, maxLength: 32000, placeholder: 'Write a message…' });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        composer.requestSubmit();
      }
    });
    this.sendButton = el('button', { type: 'submit', className: 'primary', textContent: 'Send' });
    // Named apart from a form's submit button, which may say "Send" too (a form's label is the agent's).
    this.sendButton.setAttribute('aria-label', 'Send message');
    this.stopButton = el('button', { type: 'button', className: 'primary', textContent: 'Stop', hidden: true });
    this.stopButton.addEventListener('click', () => this.stop());
    const composer = el(
      'form',
      { className: 'composer' },
      el('label', { htmlFor: inputId, className: 'sr-only', textContent: 'Message' }),
      this.input,
      this.sendButton,
      this.stopButton,
    );
    composer.addEventListener('submit', (e) => {
      e.preventDefault();
      const text = this.input.value.trim();
      if (!text || this.busy) return;
      this.input.value = '';
      void this.send(text);
    });

    this.panel = el('section', { id: panelId, className: 'panel', hidden: !o.container }, header, this.log, composer);
    this.panel.setAttribute('role', o.container ? 'region' : 'dialog');
    this.panel.setAttribute('aria-labelledby', this.title.id);
    this.panel.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && !o.container) {
        e.stopPropagation();
        this.close();
      }
    });
    if (o.container) this.root.append(this.panel);
    else this.root.append(this.panel, this.launcher);
    (o.container ?? document.body).append(this.element);
    this.ready = this.start();
  }

  open(): void {
    this.panel.hidden = false;
    this.launcher.setAttribute('aria-expanded', 'true');
    this.input.focus();
    this.log.scrollTop = this.log.scrollHeight;
  }

  close(): void {
    if (this.o.container) return;
    this.panel.hidden = true;
    this.launcher.setAttribute('aria-expanded', 'false');
    this.launcher.focus();
  }

  destroy(): void {
    this.busy?.abort();
    this.element.remove();
  }

  /** The session, the theme, then the conversation kept from an earlier visit (D-57). */
  private async start(): Promise<void> {
    try {
      await this.client.session();
      const config = await this.client.config();
      this.theme(config);
      const conv = await this.client.conversation();
      if (conv) this.replay(conv.items);
      if (!this.log.childElementCount) this.log.append(el('p', { className: 'empty', textContent: `Ask ${this.agentName} anything.` }));
      // An open panel (the inline one) shows the latest message, as open() does for the launcher's.
      this.log.scrollTop = this.log.scrollHeight;
    } catch (err) {
      // Said in the panel; a send tries the session again.
      this.notice(`The chat is unavailable: ${messageOf(err)}`);
    }
  }

  private theme(config: AppConfig): void {
    this.agentName = config.agent.name;
    this.title.textContent = config.agent.name;
    this.launcher.textContent = `Chat with ${config.agent.name}`;
    this.launcher.setAttribute('aria-label', `Open chat with ${config.agent.name}`);
    this.root.adoptedStyleSheets = [
      sheet(BASE_CSS),
      sheet(themeCss(config.agent.config.primary_color, config.agent.config.secondary_color)),
    ];
  }

  private newConversation(): void {
    if (this.busy) this.busy.abort();
    this.client.forgetConversation();
    this.log.replaceChildren(el('p', { className: 'empty', textContent: `Ask ${this.agentName} anything.` }));
    this.doc = {};
    this.liveForm = undefined;
    this.input.focus();
  }

  /** Draws the history of a conversation read back (after a reload). */
  private replay(items: Item[]): void {
    let formResponse: string | undefined;
    for (const item of items) {
      if (item.type === 'message') {
        const text = (item.content ?? []).map((p) => p.text ?? '').join('');
        if (item.role === 'user') {
          if (this.liveForm && text.startsWith(SUBMISSION_HEADER)) {
            markSubmitted(this.liveForm);
            this.liveForm = undefined;
          }
          this.bubble('user', text);
        } else this.bubble('agent', text);
      } else if (item.type === 'function_call' && item.name) {
        this.status(statusOf(item.name, true));
      } else if (item.type === 'data_spec' && item.data) {
        // A new response's first patch starts a new form document.
        if (item.response_id !== formResponse) {
          formResponse = item.response_id;
          this.doc = {};
          this.liveForm = undefined;
        }
        this.patch(item.data.patch);
      }
    }
  }

  /** Stop: the reply is cancelled through the API (kept as cancelled, D-33); without its id, the stream is closed. */
  private stop(): void {
    const busy = this.busy;
    if (!busy) return;
    if (this.client.replying === undefined) busy.abort();
    else this.client.cancel().catch(() => busy.abort());
  }

  private async send(text: string): Promise<void> {
    await this.ready;
    this.log.querySelector('.empty')?.remove();
    this.bubble('user', text);
    let reply: HTMLElement | undefined;
    /** Each message item of the reply is its own bubble, in order with the forms and status lines between them. */
    const bubbles = new Map<unknown, Element>();
    const bodyFor = (index: unknown): Element => {
      let b = bubbles.get(index);
      if (!b) {
        reply = this.bubble('agent', '');
        b = reply.querySelector('.text')!;
        bubbles.set(index, b);
      }
      return b;
    };
    const busy = new AbortController();
    this.busy = busy;
    this.showBusy(true);
    let failure: string | undefined;
    let cancelled = false;
    let status: HTMLElement | undefined;
    this.doc = {};
    this.liveForm = undefined;
    try {
      for await (const e of this.client.send(text, busy.signal)) {
        this.element.dispatchEvent(new CustomEvent('parley:event', { bubbles: true, detail: { ...e, at: performance.now() } }));
        this.onEvent(
          e,
          bodyFor,
          () => status,
          (s) => (status = s),
        );
        if (e.event === 'response.failed') {
          const error = e.data.error as { code?: string; message?: string } | undefined;
          cancelled = error?.code === 'cancelled' || error?.code === 'client_disconnected';
          failure = error?.message ?? 'The reply failed.';
        }
      }
    } catch (err) {
      if (busy.signal.aborted) cancelled = true;
      else failure = messageOf(err);
    } finally {
      this.busy = undefined;
      this.showBusy(false);
    }
    if (cancelled || failure)
      this.failed(reply ?? this.bubble('agent', ''), cancelled ? 'Reply cancelled.' : `Reply failed: ${failure}`, text);
    this.log.scrollTop = this.log.scrollHeight;
  }

  private onEvent(
    e: StreamEvent,
    bodyFor: (outputIndex: unknown) => Element,
    getStatus: () => HTMLElement | undefined,
    setStatus: (s: HTMLElement) => void,
  ): void {
    switch (e.event) {
      case 'response.output_text.delta':
        // Text, always: a reply containing <b> or <script> shows those characters.
        bodyFor(e.data.output_index).textContent += String(e.data.delta ?? '');
        break;
      case 'response.function_call.start':
        setStatus(this.status(statusOf(String(e.data.name), false)));
        break;
      case 'response.function_call_arguments.done':
        if (getStatus()) getStatus()!.textContent = statusOf(String(e.data.name), true);
        break;
      case 'response.data_spec':
        this.patch((e.data.data as { patch: unknown }).patch);
        break;
    }
    this.log.scrollTop = this.log.scrollHeight;
  }

  /** Applies one patch to the form document and redraws the live form (D-22). */
  private patch(op: unknown): void {
    this.doc = applyPatch(this.doc, op);
    this.element.dispatchEvent(new CustomEvent('parley:form', { bubbles: true, detail: this.doc }));
    const form = formOf(this.doc);
    if (!form) return;
    const next = renderForm(form, (values) => this.submit(form, values, next));
    if (this.busy) holdSubmit(next, true);
    if (this.liveForm?.isConnected) this.liveForm.replaceWith(next);
    else this.log.append(next);
    this.liveForm = next;
  }

  /**
   * What the panel shows while a reply streams, and undoes when it ends: Stop in place of Send, the log
   * marked busy, and the submit buttons of the forms not yet sent held (D-59).
   */
  private showBusy(busy: boolean): void {
    this.sendButton.hidden = busy;
    this.stopButton.hidden = !busy;
    if (busy) this.log.setAttribute('aria-busy', 'true');
    else this.log.removeAttribute('aria-busy');
    for (const f of this.log.querySelectorAll<HTMLFormElement>('form.gen-form')) holdSubmit(f, busy);
  }

  private submit(form: FormSpec, values: Record<string, string>, el: HTMLFormElement): void {
    if (this.busy) return;
    markSubmitted(el);
    this.liveForm = undefined;
    // Its controls are disabled, the focused submit button with them: the focus goes to the composer
    // rather than falling to <body>, where Escape (D-59) no longer reaches the panel.
    this.input.focus();
    void this.send(submissionText(form, values));
  }

  private bubble(who: 'user' | 'agent', text: string): HTMLElement {
    const b = el(
      'div',
      { className: `msg ${who}` },
      el('span', { className: 'who', textContent: who === 'user' ? 'You' : this.agentName }),
      el('span', { className: 'text', textContent: text }),
    );
    this.log.append(b);
    return b;
  }

  private status(text: string): HTMLElement {
    const s = el('p', { className: 'status', textContent: text });
    this.log.append(s);
    return s;
  }

  private notice(text: string): void {
    this.log.append(el('p', { className: 'empty', textContent: text }));
  }

  /** A failed or cancelled reply stays, marked as such, with a retry that sends the same turn again. */
  private failed(reply: HTMLElement, text: string, turn: string): void {
    reply.classList.add('failed');
    const retry = el('button', { type: 'button', className: 'retry', textContent: 'Retry' });
    retry.addEventListener('click', () => {
      retry.remove();
      void this.send(turn);
    });
    reply.append(el('span', { className: 'error', textContent: text }), retry);
    retry.focus();
  }
}

function messageOf(err: unknown): string {
  if (err instanceof WidgetApiError) return err.message;
  return 'the server could not be reached.';
}

/** Where this script came from: the default server of every widget it mounts. */
const script = document.currentScript as HTMLScriptElement | null;
const scriptOrigin = script?.src ? new URL(script.src).origin : location.origin;

export function mount(options: MountOptions): MountedWidget {
  return new Widget({ ...options, baseUrl: (options.baseUrl ?? scriptOrigin).replace(/\/+$/, '') });
}

declare global {
  interface Window {
    ParleyWidget: { mount: typeof mount };
  }
}
window.ParleyWidget = { mount };

// The one-tag embed: data attributes on the script itself.
const appId = script?.dataset.appId;
const key = script?.dataset.publishableKey;
if (appId && key) {
  const go = () => mount({ appId, publishableKey: key, identity: script?.dataset.identity || undefined });
  if (document.body) go();
  else document.addEventListener('DOMContentLoaded', go, { once: true });
}
