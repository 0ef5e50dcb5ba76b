// A loopback fake Ollama: POST /api/chat streams a fixed NDJSON reply (Ollama's wire format), one
// token line every `gapMs`, so the direct and the proxied runs see the same model speed.
// `node --import tsx bench/fake-ollama.ts <tokens> <gapMs>`
import http from 'node:http';
import { listenAsChild } from './child.ts';

const tokens = Number(process.argv[2] ?? 200);
const gapMs = Number(process.argv[3] ?? 1);
const model = 'bench';

function line(obj: unknown): string {
  return `${JSON.stringify(obj)}\n`;
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const url = req.url ?? '/';
    if (url === '/api/version') return json(res, { version: '0.12.0' });
    if (url === '/api/tags')
      return json(res, { models: [{ name: `${model}:latest`, model: `${model}:latest`, size: 1, digest: 'x', details: {} }] });
    if (url === '/api/show')
      return json(res, { modelfile: '', parameters: '', template: '', details: {}, capabilities: ['completion', 'tools'] });
    if (url !== '/api/chat' && url !== '/api/generate') {
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: 'not found' }));
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { stream?: boolean };
    const chat = url === '/api/chat';
    const created_at = new Date().toISOString();
    const piece = (i: number) => `tok${i} `;
    if (body.stream === false) {
      const text = Array.from({ length: tokens }, (_, i) => piece(i)).join('');
      return json(res, {
        model,
        created_at,
        ...(chat ? { message: { role: 'assistant', content: text } } : { response: text }),
        done: true,
        done_reason: 'stop',
        prompt_eval_count: 10,
        eval_count: tokens,
      });
    }
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    let i = 0;
    const timer = setInterval(() => {
      if (i < tokens) {
        const content = piece(i++);
        res.write(
          line({ model, created_at, ...(chat ? { message: { role: 'assistant', content } } : { response: content }), done: false }),
        );
        return;
      }
      clearInterval(timer);
      res.end(
        line({
          model,
          created_at,
          ...(chat ? { message: { role: 'assistant', content: '' } } : { response: '' }),
          done: true,
          done_reason: 'stop',
          total_duration: 1,
          load_duration: 1,
          prompt_eval_count: 10,
          prompt_eval_duration: 1,
          eval_count: tokens,
          eval_duration: 1,
        }),
      );
    }, gapMs);
    res.on('close', () => clearInterval(timer));
  });
});

function json(res: http.ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

listenAsChild(server);
