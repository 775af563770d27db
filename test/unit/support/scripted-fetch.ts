/** A request a scripted fetch was sent, as the caller made it. */
export interface ScriptedRequest {
  readonly url: string;
  readonly method: string;
  readonly headers: Headers;
  readonly body: unknown;
}

/** A fetch that answers from a script, one step per request, and records each request. */
export function scriptedFetch(steps: (() => Response | Error)[]) {
  const sent: ScriptedRequest[] = [];
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    sent.push({
      url: String(input),
      method: init?.method ?? 'GET',
      headers: new Headers(init?.headers),
      body: init?.body,
    });
    const step = steps.shift();
    if (!step) throw new Error(`unexpected request ${init?.method ?? 'GET'} ${String(input)}`);
    const outcome = step();
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }) as typeof globalThis.fetch;
  return { fetch, sent };
}

/** A problem document answer, as the API sends one. */
export function problemResponse(
  status: number,
  code: string,
  extra: { readonly headers?: Record<string, string>; readonly instance?: string } = {},
): Response {
  const body = {
    type: `urn:longhaul:problem:${code}`,
    title: code,
    status,
    detail: `detail of ${code}`,
    code,
    ...(extra.instance ? { instance: extra.instance } : {}),
  };
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/problem+json', ...extra.headers },
  });
}

/** A job as the API answers GET /v1/jobs/{id}. */
export function jobBody(id: string, status: string, progress: number) {
  return {
    id,
    type: 'image.generate',
    provider: 'longhaul-http',
    priority: 'standard',
    status,
    progress,
    input: { prompt: 'x' },
    result: null,
    error: null,
    attempts: 0,
    idempotencyKey: 'k',
    runAt: '2026-01-01T00:00:00.000Z',
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: `2026-01-01T00:00:0${Math.min(9, Math.floor(progress / 10))}.000Z`,
  };
}

export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}
