// node:http answers malformed requests, over-long headers and slow requests by itself, with an empty
// body; this answers them with the error object and a request id, as every other answer.
import http, { type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { newRequestId } from '../core/ids.ts';
import { ERRORS, errorBody } from '../core/api-errors.ts';
import { isLingering, lingeringClose } from './linger.ts';

/** The server's `clientError` listener; `answeredEarly`: sockets whose request was answered before its body was all in, and that request. */
export function answerClientError(
  log: Logger,
  answeredEarly: WeakMap<Socket, IncomingMessage>,
): (err: NodeJS.ErrnoException, socket: Socket) => void {
  return (err, socket) => {
    // node's request timeout while an answered request's body still arrives: closed in stages, as a
    // lingering close (its own bounds); a destroy now would reset a client still sending (./linger.ts).
    const answered = answeredEarly.get(socket);
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && (answered || isLingering(socket))) {
      if (answered) lingeringClose(answered);
      return;
    }
    // Nothing is ever written after a connection's answer but its close: a pipelining client would
    // take a late 408 for the answer to its next request.
    if (!socket.writable || answeredEarly.has(socket) || (err.code === 'ECONNRESET' && !socket.bytesWritten)) {
      socket.destroy();
      return;
    }
    const name =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? 'headers_too_large'
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? 'request_timeout'
          : 'malformed_request';
    const status = ERRORS[name].status;
    const requestId = newRequestId();
    log.warn({ req_id: requestId, code: err.code, status }, 'client error');
    const message =
      name === 'headers_too_large'
        ? 'The request headers or URL are too large.'
        : name === 'request_timeout'
          ? 'The request took too long to arrive.'
          : malformedMessage(err.code);
    const body = JSON.stringify(errorBody(name, message));
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nx-request-id: ${requestId}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  };
}

/** What a user can fix: the URL most often carries an unencoded space or non-ASCII character. */
function malformedMessage(code: string | undefined): string {
  if (code === 'HPE_INVALID_URL') return 'The request URL is not valid: percent-encode spaces and non-ASCII characters (é is %C3%A9).';
  return 'The request is not valid HTTP.';
}
