import { jobIdOf } from '../../../lambdas/domain/job';

/**
 * Calls the simulated provider's routes (`/_sim/*` controls and the provider
 * API) from tests: GET without a body, POST with one; the parsed JSON answer.
 */
export function simulatorCall(providerUrl: string) {
  return async (path: string, body?: unknown): Promise<any> => {
    const response = await fetch(`${providerUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return text ? JSON.parse(text) : undefined;
  };
}

/** Each job's charges at the provider, from a ledger's submissions, by the job each idempotency key names. */
export function chargesByJob(
  submissions: readonly { readonly idempotencyKey: string }[],
): Record<string, number> {
  const charges: Record<string, number> = {};
  for (const { idempotencyKey } of submissions) {
    const id = jobIdOf(idempotencyKey);
    charges[id] = (charges[id] ?? 0) + 1;
  }
  return charges;
}
