// A webhook receiver in a process of its own (bench/lab/ab-webhooks.ts --receiver-apart): answers 204 to
// every request once its body has arrived.
import http from 'node:http';
import { listenAsChild } from '../child.ts';

const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(204).end());
});
listenAsChild(server);
