// The floor of any proxy on this machine: node:http passing requests to the fake Ollama and its
// NDJSON back, chunk by chunk, with nothing else (no auth, storage, SSE or parsing). The Ollama
// figure compares Parley's added time with this one's. `node --import tsx bench/raw-proxy.ts <port>`
import http from 'node:http';
import { listenAsChild } from './child.ts';

const upstream = Number(process.argv[2]);
const agent = new http.Agent({ keepAlive: true });

const server = http.createServer((req, res) => {
  const out = http.request({ host: '127.0.0.1', port: upstream, method: req.method, path: req.url, headers: req.headers, agent }, (up) => {
    res.writeHead(up.statusCode ?? 502, up.headers);
    up.on('data', (chunk: Buffer) => res.write(chunk));
    up.on('end', () => res.end());
  });
  out.on('error', () => res.destroy());
  req.pipe(out);
});

listenAsChild(server, () => agent.destroy());
