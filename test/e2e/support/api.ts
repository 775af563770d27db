import { pollUntil } from '../../../local/harness/local-stack';

/**
 * The REST API's rate and burst limits for a local stack whose tests are not
 * about throttling: far above the requests any of them sends at once.
 */
export const UNTHROTTLED_API = { API_RATE_LIMIT: '1000', API_BURST_LIMIT: '2000' } as const;

/** What the REST API answered: its status and its parsed JSON body. */
export interface ApiAnswer {
  readonly status: number;
  readonly body: any;
}

/**
 * Calls the REST API of a local stack with a tenant's key, a JSON body and an
 * optional Idempotency-Key. A 5xx is never an answer a test expects: it throws
 * with the body, so the failure names the server's error. `baseUrl` is read at
 * each call, as a stack started in `beforeAll` is not there yet when this is made.
 */
export function apiCall(baseUrl: () => string, key: string) {
  return async (
    method: string,
    path: string,
    body?: unknown,
    idempotencyKey?: string,
  ): Promise<ApiAnswer> => {
    const response = await fetch(`${baseUrl()}${path}`, {
      method,
      headers: {
        'x-api-key': key,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 500) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
}

/** The statuses a job ends in. */
const SETTLED = ['succeeded', 'failed', 'canceled', 'needs_review'];

/** Polls a job until it has settled (within `timeoutMs`), and answers it as the API shows it then. */
export function settledJob(api: ReturnType<typeof apiCall>, jobId: string, timeoutMs: number): Promise<any> {
  return pollUntil(
    async () => {
      const { body } = await api('GET', `/v1/jobs/${jobId}`);
      return SETTLED.includes(body.status) ? body : undefined;
    },
    { timeoutMs, intervalMs: 250, description: `job ${jobId} to settle` },
  );
}
