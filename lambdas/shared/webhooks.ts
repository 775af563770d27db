import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { StepError } from '../../config/workflow-errors';
import { AssetUnavailableError, InvalidJobInputError } from '../domain/errors';
import { webhookUrlProblem } from '../domain/requests';
import { signPayload } from './signature';

/** A delivery that did not get a 2xx; its name is what the workflow's Retry matches. */
export class WebhookDeliveryFailedError extends Error {
  override readonly name = StepError.webhookDeliveryFailed;
}

/** The header that carries a webhook's event id, the same on every delivery of that event. */
export const WEBHOOK_EVENT_ID_HEADER = 'longhaul-event-id';

export interface WebhookTarget {
  readonly url: string;
  readonly body: string;
  /** Sent in the Longhaul-Event-Id header: receivers deduplicate retried deliveries on it. */
  readonly eventId: string;
  readonly secret: string;
  readonly timeoutMs: number;
  readonly allowPrivate: boolean;
}

export type DeliveryOutcome = 'sent' | 'refused';

/**
 * POSTs one signed webhook. Unless private targets are allowed, the host must
 * resolve only to public addresses (checked here, at send time, because DNS
 * can change after the job was accepted). Redirects are not followed.
 */
export async function deliverSignedWebhook(target: WebhookTarget): Promise<DeliveryOutcome> {
  const policy = { allowPrivateWebhooks: target.allowPrivate };
  if (webhookUrlProblem(target.url, policy)) return 'refused';
  if (!target.allowPrivate && (await resolvesToPrivate(new URL(target.url).hostname))) return 'refused';
  const signature = signPayload(target.secret, target.body, Math.floor(Date.now() / 1000));
  let response: Response;
  try {
    response = await fetch(target.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'longhaul-signature': signature,
        [WEBHOOK_EVENT_ID_HEADER]: target.eventId,
        'user-agent': 'Longhaul-Webhooks/1',
      },
      body: target.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(target.timeoutMs),
    });
    await response.body?.cancel();
  } catch (error) {
    throw new WebhookDeliveryFailedError(`Webhook delivery failed: ${(error as Error).message}`);
  }
  if (response.status < 200 || response.status >= 300) {
    throw new WebhookDeliveryFailedError(`Webhook answered ${response.status}.`);
  }
  return 'sent';
}

async function resolvesToPrivate(hostname: string): Promise<boolean> {
  if (isIP(hostname.replace(/^\[|\]$/g, ''))) return false; // literal addresses were checked by webhookUrlProblem
  try {
    const addresses = await lookup(hostname, { all: true });
    return addresses.some(
      ({ address }) =>
        webhookUrlProblem(`https://${address.includes(':') ? `[${address}]` : address}/`, {
          allowPrivateWebhooks: false,
        }) !== undefined,
    );
  } catch {
    return true; // unresolvable: nothing to send to
  }
}

/** HEAD of a remote input: its declared size and media type. */
export async function probeUrl(
  url: string,
  timeoutMs: number,
): Promise<{ size?: number; contentType?: string }> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'HEAD',
      redirect: 'follow',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new AssetUnavailableError(`The audio URL could not be reached: ${(error as Error).message}`);
  }
  // The host's trouble, not the input's: worth another try.
  if (response.status >= 500 || response.status === 429) {
    throw new AssetUnavailableError(`The audio URL answered ${response.status}.`);
  }
  if (!response.ok) {
    throw new InvalidJobInputError(
      `[input_unreachable] The audio URL answered ${response.status}.`,
      'input_unreachable',
    );
  }
  const length = response.headers.get('content-length');
  const type = response.headers.get('content-type')?.split(';')[0]?.trim();
  return { ...(length ? { size: Number(length) } : {}), ...(type ? { contentType: type } : {}) };
}

/** The largest provider output file Longhaul copies into its output bucket. */
const MAX_OUTPUT_BYTES = 256 * 1024 * 1024;

/**
 * Fetches a provider's output file to keep it: providers delete outputs
 * (Replicate after an hour), so the copy is made when the job finishes. A
 * file that is gone is the job's outcome; anything else is worth another try.
 */
export async function fetchOutput(
  url: string,
  timeoutMs: number,
): Promise<{ readonly bytes: Uint8Array; readonly contentType?: string }> {
  let response: Response;
  try {
    response = await fetch(url, { redirect: 'follow', signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    throw new AssetUnavailableError(
      `The provider's output could not be fetched: ${(error as Error).message}`,
    );
  }
  if (response.status === 404 || response.status === 410) {
    throw new InvalidJobInputError(
      `[output_expired] The provider no longer has the output (${response.status}).`,
      'output_expired',
    );
  }
  if (!response.ok) throw new AssetUnavailableError(`The provider's output answered ${response.status}.`);
  const length = Number(response.headers.get('content-length') ?? '0');
  if (length > MAX_OUTPUT_BYTES) {
    throw new InvalidJobInputError(
      `[output_too_large] The provider's output is ${length} bytes; at most ${MAX_OUTPUT_BYTES} are kept.`,
      'output_too_large',
    );
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  const type = response.headers.get('content-type')?.split(';')[0]?.trim();
  return { bytes, ...(type ? { contentType: type } : {}) };
}
