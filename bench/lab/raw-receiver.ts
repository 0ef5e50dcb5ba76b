// A webhook receiver that costs next to nothing (bench/lab/ab-webhooks.ts --receiver-raw): a TCP server
// answering each request with a canned `204` once its head and `content-length` bytes have come, no
// HTTP parser. It tells what a send pays for the receiver's own CPU on the shared cores.
import net from 'node:net';
import { listenAsChild } from '../child.ts';

const ANSWER = Buffer.from('HTTP/1.1 204 No Content\r\nKeep-Alive: timeout=5\r\n\r\n');
const sockets = new Set<net.Socket>();
const server = net.createServer((socket) => {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
  socket.on('error', () => {});
  let pending = '';
  socket.on('data', (chunk) => {
    pending += chunk.toString('latin1');
    for (;;) {
      const head = pending.indexOf('\r\n\r\n');
      if (head < 0) return;
      const length = Number(/content-length: *(\d+)/i.exec(pending.slice(0, head))?.[1] ?? 0);
      if (pending.length < head + 4 + length) return;
      pending = pending.slice(head + 4 + length);
      socket.write(ANSWER);
    }
  });
});
// listenAsChild closes an http.Server's connections; a net.Server's are closed here.
listenAsChild(
  Object.assign(server, {
    closeAllConnections: () => {
      for (const s of sockets) s.destroy();
    },
  }) as never,
);
