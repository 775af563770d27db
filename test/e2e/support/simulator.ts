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
