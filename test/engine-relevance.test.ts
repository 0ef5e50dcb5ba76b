// D-111: the knowledge search returns only passages relevant to the question. On-topic questions,
// paraphrased, in English and French, are still answered from the right passage; off-topic ones are
// told plainly that nothing matched, in their own language. The conformance suite's probe messages
// still get a knowledge_search call and a form.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FORM_REQUEST, KB_QUESTION, QUESTION } from '../conformance/cases/events.ts';
import { loadKnowledgeBases } from '../src/engines/knowledge.ts';
import { FIXTURES_DIR, startTestServer, type TestServer } from './support/helpers.ts';

const kb = (await loadKnowledgeBases(FIXTURES_DIR, ['demo'])).get('demo')!;

/** A question and the passage (document, section heading) that answers it. */
const ON_TOPIC: Array<[string, string, string]> = [
  ['How do I rotate an API key?', 'api-keys.md', 'Rotating a key'],
  ['How do I replace an old API key with a new one?', 'api-keys.md', 'Rotating a key'],
  ['Can I put my secret key in the browser?', 'api-keys.md', 'API keys and authentication'],
  ['What is a publishable key for?', 'api-keys.md', 'Publishable keys'],
  ['How do refunds work?', 'billing-credits.md', 'Refunds'],
  ['How do I get a refund for credits?', 'billing-credits.md', 'Refunds'],
  ['Summarize the refund policy for credits', 'billing-credits.md', 'Refunds'],
  ['How many tokens does one credit buy?', 'billing-credits.md', 'Billing and credits'],
  ['What happens when I hit the rate limit?', 'rate-limits.md', 'When you hit the limit'],
  ['What is error 429?', 'rate-limits.md', 'When you hit the limit'],
  ['What does the Limited plan allow?', 'rate-limits.md', 'Plans'],
  ['How long are conversations kept?', 'data-retention.md', 'Data retention and deletion'],
  ['Can I put passwords in metadata?', 'data-retention.md', 'Personal data'],
  ["How do I erase a user's data for good?", 'data-retention.md', 'Personal data'],
  ['What is the order of events in a stream?', 'streaming.md', 'Event order'],
  ['What happens if the client disconnects?', 'streaming.md', 'Keep-alive and disconnects'],
  ['How do I install Parley?', 'getting-started.md', 'Install and run'],
  ['How do I create my first conversation?', 'getting-started.md', 'Your first conversation'],
  // French questions meet the English documents through shared words and the documents' French titles.
  ['Comment changer ma clé API ?', 'api-keys.md', 'API keys and authentication'],
  ['Où mettre ma clé secrète ?', 'api-keys.md', 'API keys and authentication'],
  ['Comment fonctionne la facturation des crédits ?', 'billing-credits.md', 'Billing and credits'],
  ['Combien de tokens pour un crédit ?', 'billing-credits.md', 'Billing and credits'],
  ['Que se passe-t-il quand je dépasse la limite de débit ?', 'rate-limits.md', 'When you hit the limit'],
  ['Comment recevoir la réponse en streaming ?', 'streaming.md', 'Streaming responses'],
  ['Conservation des données', 'data-retention.md', 'Data retention and deletion'],
  ['Comment installer Parley ?', 'getting-started.md', 'Install and run'],
];

/** Questions the knowledge base says nothing about, though some share a word with it ("order", "return", "passwords"). */
const OFF_TOPIC_EN = [
  'Where is my order?',
  'Can I return these shoes?',
  'What is the weather in Paris?',
  'Recommend a pizza place near me',
  'Who won the game last night?',
  'Do you sell garden furniture?',
  'Track my package',
  'What are your opening hours?',
  'How do I reset my password?',
  'Can I change my delivery address?',
  'I want to cancel my subscription',
];
const OFF_TOPIC_FR = [
  'Où est ma commande ?',
  'Quel temps fait-il à Montréal ?',
  "Je veux annuler ma réservation d'hôtel",
  "Quels sont vos horaires d'ouverture ?",
  'Puis-je retourner ces chaussures ?',
  'Comment réinitialiser mon mot de passe ?',
  'Livrez-vous à Québec ?',
  'Où est mon colis ?',
];

describe('the knowledge search returns relevant passages only (D-111)', () => {
  test('on-topic paraphrases, English and French, find the passage that answers them first', () => {
    for (const [q, document, heading] of ON_TOPIC) {
      const best = kb.search(q)[0];
      assert.deepEqual([best?.document, best?.heading], [document, heading], q);
    }
  });

  test('off-topic questions, English and French, find nothing', () => {
    for (const q of [...OFF_TOPIC_EN, ...OFF_TOPIC_FR]) assert.deepEqual(kb.search(q), [], q);
  });

  test('a lone word counts in the text or the title, not in a section heading alone', () => {
    // "order" is in the heading "Event order" only; "refund" is in the heading "Refunds" and its text.
    assert.deepEqual(kb.search('order'), []);
    assert.equal(kb.search('refunds')[0]?.heading, 'Refunds');
    assert.equal(kb.search('event order')[0]?.heading, 'Event order');
  });
});

describe('the embedded engine on the real server (D-111)', () => {
  let s: TestServer;
  before(async () => (s = await startTestServer()));
  after(() => s.close());

  async function ask(app: string, content: string): Promise<any[]> {
    const c = await s.call('POST', `/apps/${app}/conversations`, {});
    const r = await s.call('POST', `/apps/${app}/conversations/${c.body.id}`, { message: { content }, stream: false });
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'completed');
    return r.body.output;
  }
  const textOf = (output: any[]) => output.flatMap((o) => (o.type === 'message' ? o.content.map((p: any) => p.text) : [])).join('');

  test('an off-topic question is told plainly that nothing matched, in its language', async () => {
    assert.equal(
      textOf(await ask('app_demo', 'Where is my order?')),
      'I found nothing about “Where is my order” in the knowledge base, so I cannot answer that reliably. Try other words, or ask about another topic.',
    );
    assert.match(
      textOf(await ask('app_knowledge', 'Où est ma commande ?')),
      /^Je n’ai rien trouvé sur « Où est ma commande » dans la base de connaissances/,
    );
  });

  test('an on-topic question is still answered from its passage', async () => {
    assert.match(
      textOf(await ask('app_demo', 'How do I rotate an API key?')),
      /^According to “API keys and authentication” \(api-keys\.md\): Create a new key in the dashboard/,
    );
    assert.match(
      textOf(await ask('app_knowledge', 'Comment fonctionne la facturation des crédits ?')),
      /^According to “Billing and credits”/,
    );
  });

  test("the conformance suite's probe messages still get a knowledge_search call and a form", async () => {
    for (const [app, q] of [
      ['app_demo', QUESTION],
      ['app_knowledge', KB_QUESTION],
    ] as const) {
      const calls = (await ask(app, q)).filter((o) => o.type === 'function_call');
      assert.deepEqual(
        calls.map((c) => c.name),
        ['knowledge_search'],
        q,
      );
    }
    const patches = (await ask('app_genui', FORM_REQUEST)).filter((o) => o.type === 'data_spec').map((o) => o.data.patch);
    assert.equal(patches[0]?.path, '/form', FORM_REQUEST);
    assert.equal(patches[0]?.value.title, 'Book an appointment');
  });
});
