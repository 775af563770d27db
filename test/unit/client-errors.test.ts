import {
  AuthenticationError,
  ConflictError,
  InternalServerError,
  Longhaul,
  LonghaulAPIError,
  LonghaulConnectionError,
  LonghaulError,
  LonghaulTimeoutError,
  LonghaulUsageError,
  LonghaulUserAbortError,
  LonghaulWebhookError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ValidationError,
  verifyWebhook,
} from '../../client';
import { PROBLEM_CODES, type ProblemCode, problem } from '../../config/problems';
import { jobBody, jsonResponse, problemResponse, scriptedFetch } from './support/scripted-fetch';

/**
 * The SDK's errors: one base class, LonghaulError, and a subclass for each
 * kind of failure, each carrying the status, code, request id, headers and
 * problem; a wait that runs out of time or is aborted throws one of them,
 * never a DOMException.
 */

const BASE = 'https://api.example.test/prod';
const JOB_ID = 'job_errserrserrserrserrserrser';

const noWait = async (_ms: number, signal?: AbortSignal) => signal?.throwIfAborted();

function client(steps: (() => Response | Error)[], extra: Record<string, unknown> = {}) {
  const transport = scriptedFetch(steps);
  const longhaul = new Longhaul({
    baseUrl: BASE,
    apiKey: 'tenant-key',
    fetch: transport.fetch,
    webSocket: null,
    sleep: noWait,
    ...extra,
  });
  return { longhaul, sent: transport.sent };
}

describe('an answer with an error status', () => {
  it.each([
    [400, 'validation-failed', ValidationError],
    [401, 'unauthorized', AuthenticationError],
    [403, 'forbidden', PermissionDeniedError],
    [404, 'not-found', NotFoundError],
    [409, 'job-already-finished', ConflictError],
    [422, 'idempotency-key-reused', ValidationError],
    [429, 'rate-limited', RateLimitError],
    [503, 'service-unavailable', InternalServerError],
  ] as const)(
    '%i %s is a %p with its status, code, request id, headers and problem',
    async (status, code, Kind) => {
      const { longhaul } = client(
        [
          () =>
            problemResponse(status, code, {
              headers: { 'x-amzn-requestid': 'req-1234', 'retry-after': '1' },
            }),
        ],
        { maxRetries: 0 },
      );
      const error = await longhaul.getJob(JOB_ID).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Kind);
      expect(error).toBeInstanceOf(LonghaulAPIError);
      expect(error).toBeInstanceOf(LonghaulError);
      const { name, problem, headers, ...fields } = error as LonghaulAPIError;
      expect(name).toBe(Kind.name);
      expect({
        status: fields.status,
        code: fields.code,
        requestId: fields.requestId,
        retryAfterMs: fields.retryAfterMs,
      }).toEqual({ status, code, requestId: 'req-1234', retryAfterMs: 1000 });
      expect(headers?.get('x-amzn-requestid')).toBe('req-1234');
      expect(problem).toEqual({
        type: `urn:longhaul:problem:${code}`,
        title: code,
        status,
        detail: `detail of ${code}`,
        code,
      });
    },
  );

  it("takes the request id from the problem's instance when no header names it", async () => {
    const { longhaul } = client([
      () => problemResponse(404, 'not-found', { instance: 'urn:longhaul:request:abc-42' }),
    ]);
    await expect(longhaul.getJob(JOB_ID)).rejects.toMatchObject({ requestId: 'abc-42', status: 404 });
  });

  it('is an unexpected-response LonghaulAPIError of its kind when the body is no problem document', async () => {
    const { longhaul } = client([() => new Response('<html>bad gateway</html>', { status: 418 })]);
    const error = await longhaul.getJob(JOB_ID).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LonghaulAPIError);
    expect(error).toMatchObject({ status: 418, code: 'unexpected-response', requestId: undefined });
  });
});

describe('every problem the API answers (config/problems.ts)', () => {
  /** The kind each code is thrown as; a code added to the table does not compile until it has one here. */
  const KIND: Record<ProblemCode, typeof LonghaulAPIError> = {
    'idempotency-key-missing': ValidationError,
    'validation-failed': ValidationError,
    unauthorized: AuthenticationError,
    forbidden: PermissionDeniedError,
    'not-found': NotFoundError,
    'idempotency-key-in-use': ConflictError,
    'job-already-finished': ConflictError,
    'job-not-in-review': ConflictError,
    'job-not-resumable': ConflictError,
    'payload-too-large': LonghaulAPIError,
    'unsupported-media-type': LonghaulAPIError,
    'idempotency-key-reused': ValidationError,
    'rate-limited': RateLimitError,
    'tenant-queue-full': RateLimitError,
    'internal-error': InternalServerError,
    'service-unavailable': InternalServerError,
  };

  it.each(PROBLEM_CODES)('%s, with the status the API gives it, is thrown as its kind', (code) => {
    const error = LonghaulAPIError.of(problem(code, 'x'));
    expect(error.constructor).toBe(KIND[code]);
    expect(error.code).toBe(code);
  });
});

describe('no answer', () => {
  it('is a LonghaulConnectionError with status 0 once the network keeps failing', async () => {
    const reset = () =>
      new TypeError('fetch failed', { cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }) });
    const { longhaul } = client([reset, reset, reset]);
    const error = await longhaul.getJob(JOB_ID).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LonghaulConnectionError);
    expect(error).toBeInstanceOf(LonghaulError);
    expect(error).toMatchObject({
      status: 0,
      code: 'connection-error',
      headers: undefined,
      requestId: undefined,
    });
    expect((error as LonghaulError).problem).toMatchObject({ status: 0, code: 'connection-error' });
  });

  it('is a LonghaulTimeoutError (a kind of connection error) when every attempt times out', async () => {
    const hanging = (async (_input: unknown, init?: RequestInit) =>
      new Promise<Response>((_resolve, reject) => {
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason));
      })) as typeof fetch;
    const longhaul = new Longhaul({ baseUrl: BASE, apiKey: 'k', fetch: hanging, sleep: noWait });
    const error = await longhaul.getJob(JOB_ID, { timeoutMs: 10, maxRetries: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LonghaulTimeoutError);
    expect(error).toBeInstanceOf(LonghaulConnectionError);
    expect(error).toMatchObject({ code: 'timeout', status: 0 });
    expect((error as Error).message).toBe(`GET /v1/jobs/${JOB_ID}: no answer within 10 ms`);
  });

  it('is a LonghaulUserAbortError, its cause the reason, when the caller aborts', async () => {
    const { longhaul } = client([]);
    const controller = new AbortController();
    controller.abort(new Error('the user left'));
    const error = await longhaul.getJob(JOB_ID, { signal: controller.signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LonghaulUserAbortError);
    expect(error).toMatchObject({ code: 'aborted', status: 0, cause: new Error('the user left') });
  });
});

describe('waitForJob', () => {
  it('throws a LonghaulTimeoutError, not a DOMException, when its timeoutMs passes; the job goes on', async () => {
    const running = () => jsonResponse(jobBody(JOB_ID, 'running', 10));
    const { longhaul } = client(
      Array.from({ length: 10_000 }, () => running),
      {
        sleep: (ms: number, signal?: AbortSignal) =>
          new Promise<void>((resolve, reject) => {
            const timer = setTimeout(resolve, Math.min(ms, 5));
            signal?.addEventListener('abort', () => {
              clearTimeout(timer);
              reject(signal.reason);
            });
          }),
      },
    );
    const error = await longhaul.waitForJob(JOB_ID, { timeoutMs: 50 }).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(DOMException);
    expect(error).toBeInstanceOf(LonghaulTimeoutError);
    expect(error).toMatchObject({
      code: 'timeout',
      message: `Stopped waiting for ${JOB_ID} after 50 ms; the job goes on.`,
    });
  });

  it('throws a LonghaulUserAbortError, not the bare reason, when its signal aborts', async () => {
    const { longhaul } = client([() => jsonResponse(jobBody(JOB_ID, 'running', 10))]);
    const controller = new AbortController();
    const waiting = longhaul.waitForJob(JOB_ID, {
      signal: controller.signal,
      onProgress: () => controller.abort(new DOMException('stop', 'AbortError')),
    });
    const error = await waiting.catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(DOMException);
    expect(error).toBeInstanceOf(LonghaulUserAbortError);
    expect((error as Error).cause).toBeInstanceOf(DOMException);
  });
});

describe('errors made by the SDK itself', () => {
  it('are LonghaulErrors too: a misuse, a webhook that does not verify', async () => {
    const misuse = await new Longhaul({ baseUrl: BASE }).getJob(JOB_ID).catch((e: unknown) => e);
    expect(misuse).toBeInstanceOf(LonghaulUsageError);
    expect(misuse).toBeInstanceOf(LonghaulError);
    expect(misuse).toMatchObject({
      code: 'usage-error',
      status: 0,
      message: 'This needs an API key (the apiKey option).',
    });

    let webhook: unknown;
    try {
      verifyWebhook('{}', 't=1,v1=00', 'secret');
    } catch (error) {
      webhook = error;
    }
    expect(webhook).toBeInstanceOf(LonghaulWebhookError);
    expect(webhook).toBeInstanceOf(LonghaulError);
    expect(webhook).toMatchObject({ code: 'invalid-webhook', reason: 'malformed' });
  });
});
