// The widget's side of the widget API (widget/client.ts) in Node, against an in-process Parley: what it
// yields of a reply is the reply once, whatever the wire did (D-16). test/proof/widget-browser.test.ts
// drives the whole widget in Chromium; the client kit judges it there too (docs/client-kit.md).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type StreamEvent, WidgetClient } from '../widget/client.ts';
import { APP, startTestServer } from './support/helpers.ts';
import { originOf, PK } from './support/widget.ts';

for (const scenario of ['duplicate=4', 'malformed-after=3']) {
  test(`D-16: the widget's client yields each event of a reply once, and the reply whole, under ${scenario}`, async () => {
    const server = await startTestServer();
    try {
      const client = new WidgetClient({ baseUrl: originOf(server), appId: APP, publishableKey: PK, scenario });
      const events: StreamEvent[] = [];
      for await (const e of client.send('Hello', new AbortController().signal)) events.push(e);
      const numbers = events.map((e) => e.data.sequence_number);
      assert.deepEqual(numbers, [...new Set(numbers)], 'no event twice');
      assert.equal(events.at(-1)?.event, 'response.completed');
      const id = events[0]!.data.id as string;
      const saved = await server.call('GET', `/apps/${APP}/responses/${id}`);
      const text = saved.body.output
        .filter((i: { type: string }) => i.type === 'message')
        .flatMap((i: { content: Array<{ text: string }> }) => i.content.map((p) => p.text))
        .join('');
      const shown = events
        .filter((e) => e.event === 'response.output_text.delta')
        .map((e) => e.data.delta)
        .join('');
      assert.ok(text.length > 0);
      assert.equal(shown, text);
    } finally {
      await server.close();
    }
  });
}
