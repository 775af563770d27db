import { createServer, type IncomingHttpHeaders } from 'node:http';
import { listen } from '../../../local/emulators/listen';

/** One webhook delivered to the receiver, as it arrived. */
export interface Delivery {
  readonly headers: IncomingHttpHeaders;
  readonly rawBody: Buffer;
}

export interface WebhookReceiver {
  /** The URL to give a job as its `webhookUrl`. */
  readonly url: string;
  /** Every delivery so far, in the order they arrived. */
  readonly deliveries: readonly Delivery[];
  close(): Promise<void>;
}

/**
 * A client's webhook endpoint on a free local port: it records every delivery
 * and answers it with `answer` (204 unless a test wants a delivery to fail;
 * `count` is how many have arrived, this one included).
 */
export async function startWebhookReceiver(
  answer: (count: number) => number = () => 204,
): Promise<WebhookReceiver> {
  const deliveries: Delivery[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      deliveries.push({ headers: request.headers, rawBody: Buffer.concat(chunks) });
      response.writeHead(answer(deliveries.length)).end();
    });
  });
  const listening = await listen(server, '127.0.0.1');
  return { url: `${listening.endpoint}/hook`, deliveries, close: listening.stop };
}
