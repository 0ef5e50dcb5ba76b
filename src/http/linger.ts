// A connection closed while its client may still be sending is closed in stages (RFC 9112 §9.6): our
// side first (FIN, once the answer is out), then what still arrives is read and dropped for a while,
// so that the client's stack never gets a reset that could destroy the answer it has not read yet.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** How long, and how much, a closing connection keeps reading what its client still sends. */
const LINGER = { ms: 2_000, bytes: 16 * 1024 * 1024 };

/** Sockets closing by lingeringClose: their end is its to make, within its bounds. */
const lingering = new WeakSet<Socket>();

/** Whether `socket` is closing by lingeringClose. */
export function isLingering(socket: Socket): boolean {
  return lingering.has(socket);
}

export function lingeringClose(req: IncomingMessage, limits = LINGER): void {
  const socket = req.socket;
  if (socket.destroyed || lingering.has(socket)) return;
  lingering.add(socket);
  const { ms, bytes } = limits;
  const start = socket.bytesRead;
  // node ends a closing answer with destroySoon(): end(), then destroy() once the end is flushed. That
  // destroy, with input still unread, is the reset: take it back and destroy once the client is done.
  socket.removeListener('finish', socket.destroy);
  const timer = setTimeout(() => socket.destroy(), ms);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  // The client's own end (FIN) means it has stopped sending: nothing more to drop.
  socket.once('end', () => socket.destroy());
  socket.end();
  // The parser reads the rest of the body, and nobody keeps it.
  req.on('data', () => {
    if (socket.bytesRead - start > bytes) socket.destroy();
  });
  req.resume();
}
