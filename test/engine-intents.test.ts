// The embedded engine's first impression: the README's examples get sensible, deterministic answers.
// Intents are recognised, not sentences: several paraphrases per intent, in English and French, and
// what each answer must contain. Questions about the knowledge base still go to the knowledge base.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadForms } from '../src/engines/forms.ts';
import { recognise } from '../src/engines/intents.ts';
import { LocalEngine } from '../src/engines/local.ts';
import type { ModelEvent, ModelRequest, ToolSpec } from '../src/engines/types.ts';
import { FIXTURES_DIR, startTestServer, type TestServer } from './support/helpers.ts';

const forms = await loadForms(FIXTURES_DIR, ['contact', 'booking', 'feedback']);
const KB: ToolSpec = { name: 'knowledge_search', description: 'search', parameters: {} };

async function reply(content: string, over: Partial<ModelRequest> = {}): Promise<{ text: string; call?: string }> {
  const e = new LocalEngine({ forms });
  const r: ModelRequest = {
    kind: 'response',
    agentName: 'Aria',
    instructions: '',
    metadata: {},
    messages: [{ role: 'user', content }],
    tools: [KB],
    fast: false,
    ...over,
  };
  const events: ModelEvent[] = [];
  for await (const ev of e.generate(r, new AbortController().signal)) events.push(ev);
  const text = events.flatMap((x) => (x.type === 'text' ? [x.delta] : [])).join('');
  const call = events.find((x) => x.type === 'tool_call');
  return { text, call: call?.type === 'tool_call' ? call.call.name : undefined };
}

const INTENTS: Array<{ intent: string; en: string[]; fr: string[]; mustEn: RegExp; mustFr: RegExp }> = [
  {
    intent: 'greeting',
    en: ['Hello!', 'hi there', 'Hey', 'Good morning'],
    fr: ['Bonjour', 'Salut !', 'Bonsoir'],
    mustEn: /^Hello! I'm Aria\. Ask me anything/,
    mustFr: /^Bonjour ! Je suis Aria\./,
  },
  {
    intent: 'capabilities',
    en: ['What can you do?', 'what can you help me with', 'How can you help?', 'What are you able to do?', 'What can I ask you?'],
    fr: ["Qu'est-ce que tu peux faire ?", 'Que pouvez-vous faire ?', 'Comment peux-tu m’aider ?', 'À quoi sers-tu ?'],
    mustEn: /^I'm Aria\. I can answer questions from my knowledge base, .*write short texts/,
    mustFr: /^Je suis Aria\. Je peux répondre à vos questions à partir de ma base de connaissances, .*écrire de courts textes/,
  },
  {
    intent: 'write',
    en: [
      'Write a welcome line for new users',
      'Could you draft a short welcome message for new customers?',
      'Please write a greeting for new members',
      'Compose a welcome sentence for onboarding',
    ],
    fr: [
      'Écris une phrase de bienvenue pour les nouveaux utilisateurs',
      'Rédige un message de bienvenue',
      'Peux-tu écrire un mot d’accueil pour nos nouveaux clients ?',
    ],
    mustEn: /Welcome aboard!/,
    mustFr: /Bienvenue parmi nous !/,
  },
  {
    intent: 'thanks',
    en: ['Thanks a lot', 'thank you so much', 'ok thanks', 'Cheers'],
    fr: ['Merci beaucoup', 'merci !', 'Parfait, merci'],
    mustEn: /^You're welcome!/,
    mustFr: /^Avec plaisir !/,
  },
  {
    intent: 'identity',
    en: ['Who are you?', 'what are you'],
    fr: ['Qui es-tu ?', 'Qui êtes-vous ?'],
    mustEn: /^I'm Aria, an assistant/,
    mustFr: /^Je suis Aria, un assistant/,
  },
];

describe('intents, not sentences (English and French paraphrases)', () => {
  for (const { intent, en, fr, mustEn, mustFr } of INTENTS) {
    test(`${intent}: every paraphrase is recognised and answered in its language, without a tool`, async () => {
      for (const [lang, phrases, must] of [
        ['en', en, mustEn],
        ['fr', fr, mustFr],
      ] as const) {
        for (const p of phrases) {
          assert.equal(recognise(p)?.kind, intent, `${JSON.stringify(p)} is ${intent}`);
          assert.equal(recognise(p)?.lang, lang, `${JSON.stringify(p)} is ${lang}`);
          const r = await reply(p);
          assert.equal(r.call, undefined, `${JSON.stringify(p)} calls no tool`);
          assert.match(r.text, must, JSON.stringify(p));
        }
      }
    });
  }

  test('questions go to the knowledge base, even when they contain "make", "message" or a greeting', async () => {
    for (const q of [
      'How do I get a refund?',
      'How do I make a message stream?',
      'Hello! How do I reset my password?',
      'Comment créer une clé API ?',
      'Can I write to billing support?',
    ]) {
      assert.equal(recognise(q), undefined, q);
      assert.equal((await reply(q)).call, 'knowledge_search', q);
    }
  });

  test('writing requests follow their theme and their kind of text', async () => {
    assert.match(
      (await reply('Write an email to apologise for the outage')).text,
      /^Here is a short email:\n\nHello,\n\nWe’re sorry for the trouble/,
    );
    assert.match((await reply('Give me a title for our launch post')).text, /^Here is a title: “Something new is here”\.$/);
    assert.match((await reply('Write a tagline for our bakery')).text, /“Bakery: simple, clear and made for you\.”$/);
    // A completion asking for the same gets the same text (no conversation, no history).
    assert.match((await reply('Write a welcome line for new users', { kind: 'completion', tools: [KB] })).text, /Welcome aboard!/);
  });

  test('a writing request that names a form topic writes; asking for the form shows it', async () => {
    const tools: ToolSpec[] = [
      KB,
      { name: 'render_form', description: 'form', parameters: { properties: { form: { enum: ['contact', 'booking', 'feedback'] } } } },
    ];
    assert.equal((await reply('Write a thank-you message for feedback', { tools })).call, undefined);
    assert.equal((await reply('I want to give feedback', { tools })).call, 'render_form');
  });

  test('capabilities name the forms the app offers, and only what the app has', async () => {
    const tools: ToolSpec[] = [
      { name: 'render_form', description: 'form', parameters: { properties: { form: { enum: ['contact', 'booking'] } } } },
    ];
    const r = await reply('What can you do?', { tools });
    assert.match(r.text, /show you a form \(contact, booking\)/);
    assert.doesNotMatch(r.text, /knowledge base/);
  });

  test('the same message gets the same answer', async () => {
    for (const p of ['What can you do?', 'Écris une phrase de bienvenue', 'Write a tagline for our bakery'])
      assert.deepEqual(await reply(p), await reply(p));
  });
});

describe('the README examples on the real server (app_demo: knowledge base on)', () => {
  let s: TestServer;
  before(async () => (s = await startTestServer()));
  after(() => s.close());

  async function ask(content: string): Promise<string> {
    const c = await s.call('POST', '/apps/app_demo/conversations', {});
    const r = await s.call('POST', `/apps/app_demo/conversations/${c.body.id}`, { message: { content }, stream: false });
    assert.equal(r.status, 200);
    return r.body.output.flatMap((o: any) => (o.type === 'message' ? o.content.map((p: any) => p.text) : [])).join('');
  }

  test('a greeting, "what can you do?" and a writing request are answered sensibly', async () => {
    assert.match(await ask('Hello!'), /^Hello! I'm .+\. Ask me anything/);
    assert.match(await ask('What can you do?'), /I can answer questions from my knowledge base/);
    const line = await ask('Write a welcome line for new users');
    assert.match(line, /Welcome aboard!/);
    assert.doesNotMatch(line, /refund|credit/i);
  });

  test('a question about the knowledge base is still answered from it', async () => {
    assert.match(await ask('How do I get a refund for credits?'), /According to “Billing and credits”/);
  });
});
