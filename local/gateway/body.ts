import type { IncomingMessage } from 'node:http';

/** API Gateway's payload limit for a REST API request. */
export const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024;

export const TOO_LARGE = Symbol('too large');

/** The declared Content-Length exceeds `limit`. */
export function declaredTooLarge(req: IncomingMessage, limit: number): boolean {
  const declared = Number(req.headers['content-length']);
  return Number.isFinite(declared) && declared > limit;
}

/**
 * Reads the request body, keeping at most `limit` bytes in memory: past that
 * it stops collecting and answers {@link TOO_LARGE}, leaving the rest unread.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | typeof TOO_LARGE> {
  if (declaredTooLarge(req, limit)) return Promise.resolve(TOO_LARGE);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        chunks.length = 0;
        resolve(TOO_LARGE);
      } else {
        chunks.push(chunk);
      }
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const onClose = () => {
      cleanup();
      reject(new Error('the client closed the connection before sending the whole body'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/**
 * Throws away what is left of a refused body so the client, still sending,
 * can read the answer instead of seeing its connection reset; a client that
 * keeps sending past `maxBytes` or `maxMs` is cut off.
 */
export function discardRest(req: IncomingMessage, maxBytes: number, maxMs: number): void {
  if (req.complete) return;
  let discarded = 0;
  const timer = setTimeout(() => req.socket.destroy(), maxMs);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > maxBytes) req.socket.destroy();
  });
  req.once('close', () => clearTimeout(timer));
  req.resume();
}

/** Whether a function's answer names an HTTP status both gateways pass on: a whole number from 100 to 599. */
export const isHttpStatus = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 100 && value <= 599;
