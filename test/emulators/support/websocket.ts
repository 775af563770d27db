import WebSocket from 'ws';

/**
 * A WebSocket client for the live-progress endpoint that tells an accepted
 * handshake from a refused one and, when refused, with which HTTP status
 * (the global WebSocket only reports "error").
 */

export interface ReceivedMessage {
  readonly text: string;
  readonly binary: boolean;
}

export interface Closed {
  readonly code: number;
  readonly reason: string;
}

export interface StreamClient {
  readonly socket: WebSocket;
  /** Every message so far, in order. */
  readonly messages: ReceivedMessage[];
  /** Settles when the connection has closed, whoever closed it. */
  readonly closed: Promise<Closed>;
  /** Closes from this side and waits for the close to complete. */
  close(code?: number, reason?: string): Promise<Closed>;
}

export type Handshake =
  | { readonly outcome: 'open'; readonly client: StreamClient }
  | { readonly outcome: 'refused'; readonly status: number };

export function connectStream(url: string, timeoutMs = 10_000): Promise<Handshake> {
  const socket = new WebSocket(url);
  const messages: ReceivedMessage[] = [];
  socket.on('message', (data, binary) => {
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    messages.push({ text: bytes.toString('utf8'), binary });
  });
  const closed = new Promise<Closed>((resolve) => {
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') }));
  });
  return new Promise<Handshake>((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.terminate();
      reject(new Error(`no answer to the WebSocket handshake within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('open', () => {
      clearTimeout(timer);
      resolve({
        outcome: 'open',
        client: {
          socket,
          messages,
          closed,
          close(code, reason) {
            socket.close(code, reason);
            return closed;
          },
        },
      });
    });
    socket.once('unexpected-response', (request, response) => {
      clearTimeout(timer);
      response.resume();
      request.destroy();
      resolve({ outcome: 'refused', status: response.statusCode ?? 0 });
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** The client of an accepted handshake; fails the test with the status of a refused one. */
export async function openStream(url: string): Promise<StreamClient> {
  const handshake = await connectStream(url);
  if (handshake.outcome !== 'open') throw new Error(`the handshake was refused with ${handshake.status}`);
  return handshake.client;
}
