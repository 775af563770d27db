import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { type Listening, listen } from '../../../local/emulators/listen';

/** One request a provider made to the inbox, exactly as it arrived. */
export interface InboxRequest {
  readonly method: string;
  /** Path and query. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly raw: string;
  readonly json: any;
  readonly receivedAtMs: number;
}

/**
 * A local HTTP server that records every webhook or callback a simulated
 * provider sends, answering 204, so tests can check bodies and signatures
 * byte for byte.
 */
export class WebhookInbox {
  readonly requests: InboxRequest[] = [];

  private constructor(
    private readonly listening: Listening,
    readonly origin: string,
  ) {}

  static async start(): Promise<WebhookInbox> {
    let inbox: WebhookInbox | undefined;
    const listening = await listen(
      createServer((req, res) => void inbox?.receive(req, res)),
      '127.0.0.1',
    );
    inbox = new WebhookInbox(listening, listening.endpoint);
    return inbox;
  }

  /** The requests whose path starts with `path`. */
  at(path: string): InboxRequest[] {
    return this.requests.filter((request) => request.path.startsWith(path));
  }

  close(): Promise<void> {
    return this.listening.stop();
  }

  private async receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const raw = Buffer.concat(chunks).toString('utf8');
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      json = undefined;
    }
    this.requests.push({
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      raw,
      json,
      receivedAtMs: Date.now(),
    });
    res.writeHead(204).end();
  }
}

/** Polls `probe` until it returns a value (not undefined or false), or fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 5000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 15));
  }
}
