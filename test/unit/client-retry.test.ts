import {
  backoffCeilingMs,
  backoffDelayMs,
  defaultRetryOptions,
  InternalServerError,
  Longhaul,
  LonghaulConnectionError,
  LonghaulError,
  LonghaulTimeoutError,
  LonghaulUsageError,
  LonghaulUserAbortError,
  MULTIPART_UPLOAD_THRESHOLD_BYTES,
  PermissionDeniedError,
  parseRetryAfter,
  retryDelayMs,
  SDK_VERSION,
} from '../../client';
import { jobBody, scriptedFetch } from './support/scripted-fetch';

/**
 * Retries of the SDK against a scripted transport: which answers are
 * retried, how long it waits, and that every attempt of a user action sends
 * the same Idempotency-Key.
 */

const BASE = 'https://api.example.test/prod';
const options = { ...defaultRetryOptions, baseDelayMs: 100, maxDelayMs: 1000 };

const job = (id = 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa') => jobBody(id, 'queued', 0);

const problem = (status: number, code: string, headers: Record<string, string> = {}) =>
  new Response(
    JSON.stringify({ type: `urn:longhaul:problem:${code}`, title: code, status, detail: code, code }),
    {
      status,
      headers: { 'content-type': 'application/problem+json', ...headers },
    },
  );

const accepted = (headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(job()), {
    status: 202,
    headers: { 'content-type': 'application/json', location: `/prod/v1/jobs/${job().id}`, ...headers },
  });

const networkError = () =>
  new TypeError('fetch failed', {
    cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
  });
const refused = () =>
  new TypeError('fetch failed', {
    cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
  });

function client(transport: ReturnType<typeof scriptedFetch>, extra: Record<string, unknown> = {}) {
  const sleeps: number[] = [];
  const longhaul = new Longhaul({
    baseUrl: BASE,
    apiKey: 'tenant-key',
    adminKey: 'admin-key',
    fetch: transport.fetch,
    retry: { maxAttempts: 6, baseDelayMs: 100, maxDelayMs: 1000 },
    random: () => 0.5,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...extra,
  });
  return { longhaul, sleeps };
}

describe('backoff', () => {
  it('doubles its ceiling from the base delay up to the cap', () => {
    expect([0, 1, 2, 3, 4, 5, 10].map((retry) => backoffCeilingMs(retry, options))).toEqual([
      100, 200, 400, 800, 1000, 1000, 1000,
    ]);
  });

  it('draws each delay uniformly below the ceiling (full jitter)', () => {
    for (const retry of [0, 3, 8]) {
      const ceiling = backoffCeilingMs(retry, options);
      expect(backoffDelayMs(retry, options, () => 0)).toBe(0);
      expect(backoffDelayMs(retry, options, () => 0.5)).toBe(ceiling / 2);
      expect(backoffDelayMs(retry, options, () => 0.999_999)).toBe(ceiling - 1);
    }
    const drawn = Array.from({ length: 1000 }, () => backoffDelayMs(2, options));
    expect(Math.min(...drawn)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...drawn)).toBeLessThan(400);
    // Spread over the whole range, not bunched at the ceiling.
    expect(drawn.filter((d) => d < 200).length).toBeGreaterThan(300);
    expect(drawn.filter((d) => d >= 200).length).toBeGreaterThan(300);
  });

  it('never waits less than Retry-After, and jitters above it when the backoff is longer', () => {
    expect(retryDelayMs(0, 2000, options, () => 0.999)).toBe(2000);
    expect(retryDelayMs(4, 100, options, () => 0.5)).toBe(500);
    expect(retryDelayMs(4, undefined, options, () => 0.25)).toBe(250);
  });
});

describe('parseRetryAfter', () => {
  it('reads delta-seconds and HTTP dates, and ignores what it cannot read', () => {
    const now = Date.parse('2026-03-01T12:00:00Z');
    expect(parseRetryAfter('1', now)).toBe(1000);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-3', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});

describe('createJob retries', () => {
  it('retries a lost answer, 5xx, 429 and 409 in-use with the same key, honouring Retry-After', async () => {
    const transport = scriptedFetch([
      networkError,
      () => problem(503, 'service-unavailable'),
      () => problem(429, 'rate-limited', { 'retry-after': '3' }),
      () => problem(409, 'idempotency-key-in-use', { 'retry-after': '1' }),
      () => accepted({ 'idempotent-replayed': 'true' }),
    ]);
    const { longhaul, sleeps } = client(transport);
    const action = longhaul.userAction();

    const created = await longhaul.createJob(action, { type: 'image.generate', input: { prompt: 'x' } });

    expect(created).toEqual({ job: job(), replayed: true, location: `/prod/v1/jobs/${job().id}` });
    expect(transport.sent.map((s) => `${s.method} ${s.url}`)).toEqual(Array(5).fill(`POST ${BASE}/v1/jobs`));
    expect(new Set(transport.sent.map((s) => s.headers.get('idempotency-key')))).toEqual(
      new Set([action.idempotencyKey]),
    );
    expect(action.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(transport.sent.map((s) => s.body)).toEqual(
      Array(5).fill(JSON.stringify({ type: 'image.generate', input: { prompt: 'x' } })),
    );
    expect(transport.sent.every((s) => s.headers.get('x-api-key') === 'tenant-key')).toBe(true);
    // random() = 0.5: half of each ceiling (100, 200, 400, 800), but never under Retry-After.
    expect(sleeps).toEqual([50, 100, 3000, 1000]);
  });

  it('mints a new key for each new action, and keeps a resumed one', async () => {
    const transport = scriptedFetch([() => accepted(), () => accepted()]);
    const { longhaul } = client(transport);
    await longhaul.createJob(longhaul.userAction(), { type: 'image.generate', input: { prompt: 'x' } });
    await longhaul.createJob(longhaul.userAction('resume-me-42'), {
      type: 'image.generate',
      input: { prompt: 'x' },
    });
    const [first, second] = transport.sent.map((s) => s.headers.get('idempotency-key'));
    expect(second).toBe('resume-me-42');
    expect(first).not.toBe(second);
    expect(() => longhaul.userAction('has spaces')).toThrow(LonghaulUsageError);
  });

  it('does not retry what a retry cannot fix, and types the error by its problem code', async () => {
    for (const [status, code] of [
      [400, 'validation-failed'],
      [401, 'unauthorized'],
      [413, 'payload-too-large'],
      [422, 'idempotency-key-reused'],
    ] as const) {
      const transport = scriptedFetch([() => problem(status, code)]);
      const { longhaul, sleeps } = client(transport);
      const error = await longhaul
        .createJob(longhaul.userAction(), { type: 'image.generate', input: { prompt: 'x' } })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LonghaulError);
      expect({ code: (error as LonghaulError).code, status: (error as LonghaulError).status }).toEqual({
        code,
        status,
      });
      expect((error as LonghaulError).problem).toMatchObject({
        code,
        status,
        type: `urn:longhaul:problem:${code}`,
      });
      expect(transport.sent).toHaveLength(1);
      expect(sleeps).toEqual([]);
    }
  });

  it('gives up after maxAttempts with the last answer', async () => {
    const transport = scriptedFetch(Array(6).fill(() => problem(502, 'internal-error')));
    const { longhaul, sleeps } = client(transport);
    const error = await longhaul
      .createJob(longhaul.userAction(), { type: 'image.generate', input: { prompt: 'x' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect(error).toMatchObject({ code: 'internal-error', status: 502 });
    expect(transport.sent).toHaveLength(6);
    expect(sleeps).toEqual([50, 100, 200, 400, 500]);
  });

  it('throws a connection error once the network keeps failing', async () => {
    const transport = scriptedFetch(Array(6).fill(networkError));
    const { longhaul } = client(transport);
    const error = await longhaul.getJob('job_x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LonghaulConnectionError);
    expect((error as Error).message).toContain('socket hang up');
    expect(transport.sent).toHaveLength(6);
  });

  it('does not wait for a Retry-After beyond maxRetryAfterMs', async () => {
    const transport = scriptedFetch([() => problem(429, 'rate-limited', { 'retry-after': '3600' })]);
    const { longhaul, sleeps } = client(transport);
    const error = await longhaul.getJob('job_x').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'rate-limited', retryAfterMs: 3_600_000 });
    expect(sleeps).toEqual([]);
  });

  it('stops waiting when the caller aborts', async () => {
    const transport = scriptedFetch([() => problem(503, 'service-unavailable'), () => accepted()]);
    const controller = new AbortController();
    const longhaul = new Longhaul({
      baseUrl: BASE,
      apiKey: 'k',
      fetch: transport.fetch,
      sleep: async () => {
        controller.abort(new Error('user gave up'));
        throw controller.signal.reason;
      },
    });
    await expect(
      longhaul.createJob(
        longhaul.userAction(),
        { type: 'image.generate', input: { prompt: 'x' } },
        {
          signal: controller.signal,
        },
      ),
    ).rejects.toEqual(
      expect.objectContaining({
        constructor: LonghaulUserAbortError,
        code: 'aborted',
        cause: new Error('user gave up'),
      }),
    );
    expect(transport.sent).toHaveLength(1);
  });

  it('reports an error page that is no problem document as unexpected-response', async () => {
    const transport = scriptedFetch([
      () =>
        new Response('<html>Bad Request</html>', { status: 400, headers: { 'content-type': 'text/html' } }),
    ]);
    const { longhaul } = client(transport);
    const error = await longhaul.getJob('job_x').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'unexpected-response', status: 400 });
    expect((error as LonghaulError).problem.detail).toBe('<html>Bad Request</html>');
  });
});

describe('operations that are not idempotent', () => {
  it('retries an operator resolution only when the server certainly did nothing', async () => {
    const resolution = { outcome: 'failed', note: 'checked at the provider' } as const;

    const throttled = scriptedFetch([
      () => problem(429, 'rate-limited', { 'retry-after': '1' }),
      refused,
      () =>
        new Response(JSON.stringify(job()), { status: 200, headers: { 'content-type': 'application/json' } }),
    ]);
    const first = client(throttled);
    await first.longhaul.resolve('job_x', resolution);
    expect(throttled.sent).toHaveLength(3);
    expect(throttled.sent.every((s) => s.headers.get('x-api-key') === 'admin-key')).toBe(true);

    for (const step of [() => problem(503, 'service-unavailable'), networkError]) {
      const transport = scriptedFetch([step]);
      const { longhaul } = client(transport);
      await expect(longhaul.resolve('job_x', resolution)).rejects.toThrow();
      expect(transport.sent).toHaveLength(1);
    }
  });

  it('resumes failed jobs by filter with the admin key, sending the filter and note, and retries a request that may have been lost', async () => {
    const answer = { matched: 1, resumed: 1, refused: [], nextCursor: null };
    const transport = scriptedFetch([
      refused,
      () =>
        new Response(JSON.stringify(answer), {
          status: 200,
          headers: { 'content-type': 'application/json' },
        }),
    ]);
    const { longhaul } = client(transport);
    await expect(
      longhaul.resumeJobsByFilter(
        { errorCode: 'provider_unavailable', provider: 'replicate' },
        'the outage',
        {
          dryRun: false,
        },
      ),
    ).resolves.toEqual(answer);
    expect(transport.sent.map((s) => `${s.method} ${s.url}`)).toEqual(
      Array(2).fill(`POST ${BASE}/v1/admin/jobs/resume`),
    );
    expect(transport.sent[1]?.headers.get('x-api-key')).toBe('admin-key');
    expect(JSON.parse(String(transport.sent[1]?.body))).toEqual({
      filter: { errorCode: 'provider_unavailable', provider: 'replicate' },
      note: 'the outage',
      dryRun: false,
    });
  });

  it('refuses admin calls without the admin key before sending anything', async () => {
    const transport = scriptedFetch([]);
    const longhaul = new Longhaul({ baseUrl: BASE, apiKey: 'k', fetch: transport.fetch });
    await expect(longhaul.redriveDeadLetters()).rejects.toBeInstanceOf(LonghaulUsageError);
    expect(transport.sent).toHaveLength(0);
  });
});

describe('tenants (admin key)', () => {
  const tenant = {
    tenant: 'acme corp',
    weight: 3,
    maxQueued: 10_000,
    usage: { queued: 1, scheduled: 0, inFlight: 2 },
  };
  const ok = () =>
    new Response(JSON.stringify(tenant), { status: 200, headers: { 'content-type': 'application/json' } });

  it('reads a tenant by its name in the path', async () => {
    const transport = scriptedFetch([ok]);
    const { longhaul } = client(transport);
    await expect(longhaul.tenant('acme corp')).resolves.toEqual(tenant);
    expect(transport.sent.map((s) => [s.method, s.url, s.headers.get('x-api-key')])).toEqual([
      ['GET', `${BASE}/v1/admin/tenants/acme%20corp`, 'admin-key'],
    ]);
  });

  it('sets settings as JSON and retries the same body after a 503, since setting them again changes nothing', async () => {
    const transport = scriptedFetch([() => problem(503, 'service-unavailable'), ok]);
    const { longhaul } = client(transport);
    await expect(longhaul.putTenant('acme corp', { weight: 3, maxInFlight: null })).resolves.toEqual(tenant);
    expect(transport.sent).toHaveLength(2);
    for (const sent of transport.sent) {
      expect([
        sent.method,
        sent.url,
        sent.headers.get('content-type'),
        JSON.parse(sent.body as string),
      ]).toEqual([
        'PUT',
        `${BASE}/v1/admin/tenants/acme%20corp`,
        'application/json',
        { weight: 3, maxInFlight: null },
      ]);
    }
  });
});

describe('providers (admin key)', () => {
  const paused = {
    name: 'deepgram',
    state: 'paused',
    pausedUntil: '2026-05-01T10:10:00.000Z',
    reason: 'maintenance',
    maxInFlight: 1,
    inFlight: 0,
    queued: 2,
  };
  const ok = (body: unknown) => () =>
    new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });

  it('pauses a provider with its seconds and reason as JSON, sent again after a 503', async () => {
    const transport = scriptedFetch([() => problem(503, 'service-unavailable'), ok(paused)]);
    const { longhaul } = client(transport);
    await expect(
      longhaul.pauseProvider('deepgram', { seconds: 600, reason: 'maintenance' }),
    ).resolves.toEqual(paused);
    expect(
      transport.sent.map((sent) => [
        sent.method,
        sent.url,
        sent.headers.get('x-api-key'),
        JSON.parse(sent.body as string),
      ]),
    ).toEqual(
      Array(2).fill([
        'POST',
        `${BASE}/v1/admin/providers/deepgram/pause`,
        'admin-key',
        { seconds: 600, reason: 'maintenance' },
      ]),
    );
  });

  it('resumes a provider by its name in the path', async () => {
    const open = { name: 'deepgram', state: 'open', maxInFlight: 1, inFlight: 1, queued: 1 };
    const transport = scriptedFetch([ok(open)]);
    const { longhaul } = client(transport);
    await expect(longhaul.resumeProvider('deepgram')).resolves.toEqual(open);
    expect(transport.sent.map((s) => [s.method, s.url, s.headers.get('x-api-key')])).toEqual([
      ['POST', `${BASE}/v1/admin/providers/deepgram/resume`, 'admin-key'],
    ]);
  });
});

describe('files', () => {
  const png = new Uint8Array([137, 80, 78, 71, 1, 2, 3]);

  it('sends a small file as a multipart part, fresh on every attempt', async () => {
    const transport = scriptedFetch([() => problem(500, 'internal-error'), () => accepted()]);
    const { longhaul } = client(transport);
    await longhaul.createJob(longhaul.userAction(), {
      type: 'image.generate',
      input: { prompt: 'like this' },
      priority: 'interactive',
      file: { data: png, contentType: 'image/png', filename: 'a.png' },
    });
    expect(transport.sent).toHaveLength(2);
    for (const { body, headers } of transport.sent) {
      expect(headers.get('content-type')).toBeNull();
      const form = body as FormData;
      expect(form.get('type')).toBe('image.generate');
      expect(form.get('priority')).toBe('interactive');
      expect(JSON.parse(form.get('input') as string)).toEqual({ prompt: 'like this' });
      const file = form.get('file') as File;
      expect({ type: file.type, name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) }).toEqual({
        type: 'image/png',
        name: 'a.png',
        bytes: png,
      });
    }
  });

  it('sends a runAt given as a Date as its instant in UTC, in a JSON body and in a multipart one', async () => {
    const transport = scriptedFetch([() => accepted(), () => accepted(), () => accepted()]);
    const { longhaul } = client(transport);
    const runAt = new Date('2030-01-31T09:00:00.000Z');
    await longhaul.createJob(longhaul.userAction(), {
      type: 'image.generate',
      input: { prompt: 'x' },
      runAt,
    });
    await longhaul.createJob(longhaul.userAction(), {
      type: 'image.generate',
      input: { prompt: 'x' },
      runAt: '2030-01-31T10:00:00+01:00',
      file: { data: png, contentType: 'image/png' },
    });
    await longhaul.submitBatch([
      { idempotencyKey: 'b1', type: 'image.generate', input: { prompt: 'x' }, runAt },
    ]);

    expect(JSON.parse(transport.sent[0]?.body as string).runAt).toBe('2030-01-31T09:00:00.000Z');
    expect((transport.sent[1]!.body as FormData).get('runAt')).toBe('2030-01-31T10:00:00+01:00');
    expect(JSON.parse(transport.sent[2]?.body as string).items[0].runAt).toBe('2030-01-31T09:00:00.000Z');
  });

  it('uploads a file over 4 MiB once, however often the job request is retried', async () => {
    const big = new Uint8Array(4 * 1024 * 1024 + 1);
    const ticket = {
      ref: 'upl_0123456789abcdefghijklmn',
      uploadUrl: 'https://bucket.example.test/put?sig=1',
      expiresAt: '2026-01-01T00:15:00.000Z',
    };
    const transport = scriptedFetch([
      () =>
        new Response(JSON.stringify(ticket), {
          status: 201,
          headers: { 'content-type': 'application/json' },
        }),
      networkError,
      () => new Response(null, { status: 200 }),
      networkError,
      () => accepted(),
    ]);
    const { longhaul } = client(transport);
    await longhaul.createJob(longhaul.userAction(), {
      type: 'image.generate',
      input: { prompt: 'like this' },
      file: { data: big, contentType: 'image/png' },
    });
    expect(transport.sent.map((s) => `${s.method} ${s.url}`)).toEqual([
      `POST ${BASE}/v1/uploads`,
      `PUT ${ticket.uploadUrl}`,
      `PUT ${ticket.uploadUrl}`,
      `POST ${BASE}/v1/jobs`,
      `POST ${BASE}/v1/jobs`,
    ]);
    expect(JSON.parse(transport.sent[0]!.body as string)).toEqual({
      contentType: 'image/png',
      contentLength: big.length,
    });
    expect(transport.sent[1]!.headers.get('content-type')).toBe('image/png');
    expect(transport.sent[1]!.headers.get('x-api-key')).toBeNull();
    for (const attempt of transport.sent.slice(3)) {
      expect(JSON.parse(attempt.body as string)).toEqual({
        type: 'image.generate',
        input: { prompt: 'like this', sourceImageRef: ticket.ref },
      });
    }
  });
});

describe('listing', () => {
  it('iterates pages by cursor until the last one', async () => {
    const page = (items: string[], nextCursor: string | null) => () =>
      new Response(JSON.stringify({ items: items.map(job), nextCursor }), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    const transport = scriptedFetch([page(['job_a', 'job_b'], 'c1'), page(['job_c'], 'c 2'), page([], null)]);
    const { longhaul } = client(transport);
    const ids: string[] = [];
    for await (const p of longhaul.listJobs({ status: 'succeeded', limit: 2 }).pages())
      ids.push(...p.items.map((j) => j.id));
    expect(ids).toEqual(['job_a', 'job_b', 'job_c']);
    expect(transport.sent.map((s) => s.url)).toEqual([
      `${BASE}/v1/jobs?status=succeeded&limit=2`,
      `${BASE}/v1/jobs?status=succeeded&limit=2&cursor=c1`,
      `${BASE}/v1/jobs?status=succeeded&limit=2&cursor=c+2`,
    ]);
  });
});

describe('request options', () => {
  it('names the SDK and its version in User-Agent, and sends the extra headers of the client and the call', async () => {
    const transport = scriptedFetch([() => accepted()]);
    const { longhaul } = client(transport, { defaultHeaders: { 'X-Trace': 'client' } });
    await longhaul.getJob('job_aaaaaaaaaaaaaaaaaaaaaaaaaa', { headers: { 'x-request': 'call' } });
    const headers = transport.sent[0]!.headers;
    expect(headers.get('user-agent')).toBe(`longhaul-node/${SDK_VERSION} node/${process.versions.node}`);
    expect(headers.get('x-trace')).toBe('client');
    expect(headers.get('x-request')).toBe('call');
    expect(headers.get('x-api-key')).toBe('tenant-key');
  });

  it('lets a call set its own retries: none, or more than the client', async () => {
    const none = scriptedFetch([() => problem(503, 'service-unavailable')]);
    await expect(
      client(none).longhaul.getJob('job_aaaaaaaaaaaaaaaaaaaaaaaaaa', { maxRetries: 0 }),
    ).rejects.toMatchObject({ status: 503 });
    expect(none.sent).toHaveLength(1);

    const two = scriptedFetch([
      () => problem(503, 'service-unavailable'),
      () => problem(503, 'service-unavailable'),
      () => accepted(),
    ]);
    const { longhaul } = client(two, { maxRetries: 0 });
    await longhaul.getJob('job_aaaaaaaaaaaaaaaaaaaaaaaaaa', { maxRetries: 2 });
    expect(two.sent).toHaveLength(3);
  });

  it('retries twice by default, as openai-node does: three attempts in all', async () => {
    const transport = scriptedFetch(Array(8).fill(() => problem(503, 'service-unavailable')));
    const longhaul = new Longhaul({
      baseUrl: BASE,
      apiKey: 'k',
      fetch: transport.fetch,
      sleep: async () => {},
    });
    await expect(longhaul.getJob('job_x')).rejects.toBeInstanceOf(InternalServerError);
    expect(transport.sent).toHaveLength(3);
  });

  it.each([
    [0, 1],
    [1, 2],
    [5, 6],
  ])('takes maxRetries %i from the client options: %i attempts', async (maxRetries, attempts) => {
    const transport = scriptedFetch(Array(8).fill(() => problem(503, 'service-unavailable')));
    const longhaul = new Longhaul({
      baseUrl: BASE,
      apiKey: 'k',
      fetch: transport.fetch,
      sleep: async () => {},
      maxRetries,
    });
    await expect(longhaul.getJob('job_x')).rejects.toBeInstanceOf(InternalServerError);
    expect(transport.sent).toHaveLength(attempts);
  });

  it("abandons an attempt after the call's timeoutMs, and stops at once on the call's signal", async () => {
    const hanging = (async (_input: unknown, init?: RequestInit) =>
      new Promise<Response>((_resolve, reject) => {
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason));
      })) as typeof fetch;
    const longhaul = new Longhaul({
      baseUrl: BASE,
      apiKey: 'k',
      fetch: hanging,
      sleep: async () => undefined,
    });
    const started = Date.now();
    await expect(
      longhaul.getJob('job_aaaaaaaaaaaaaaaaaaaaaaaaaa', { timeoutMs: 20, maxRetries: 1 }),
    ).rejects.toBeInstanceOf(LonghaulTimeoutError);
    expect(Date.now() - started).toBeLessThan(2000);

    const controller = new AbortController();
    const pending = longhaul.getJob('job_aaaaaaaaaaaaaaaaaaaaaaaaaa', { signal: controller.signal });
    controller.abort(new Error('the user left'));
    await expect(pending).rejects.toBeInstanceOf(LonghaulUserAbortError);
    await expect(pending).rejects.toMatchObject({ cause: new Error('the user left') });
  });

  it('tells its logger of each request and retry', async () => {
    const lines: string[] = [];
    const logger = {
      debug: (message: string) => lines.push(`debug ${message}`),
      warn: (message: string) => lines.push(`warn ${message}`),
    };
    const transport = scriptedFetch([() => problem(503, 'service-unavailable'), () => accepted()]);
    await client(transport, { logger }).longhaul.getJob('job_aaaaaaaaaaaaaaaaaaaaaaaaaa');
    expect(lines).toEqual([
      'debug GET /v1/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa: 503',
      'warn GET /v1/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa: 503 service-unavailable; retrying in 50 ms',
      'debug GET /v1/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa: 202',
    ]);
  });

  it('refuses plain http to another machine unless told to allow it; this machine is fine', () => {
    expect(() => new Longhaul({ baseUrl: 'http://api.example.test', apiKey: 'k' })).toThrow(
      expect.objectContaining({
        name: 'LonghaulUsageError',
        message: expect.stringContaining('plain http to another machine'),
        options: ['baseUrl', 'allowInsecureHttp'],
      }),
    );
    expect(
      () => new Longhaul({ baseUrl: 'https://api.example.test', streamUrl: 'ws://s.example.test' }),
    ).toThrow(
      expect.objectContaining({
        message: expect.stringContaining(
          'plain ws to another machine: keys and data would cross the network unencrypted. Use wss,',
        ),
        options: ['streamUrl', 'allowInsecureHttp'],
      }),
    );
    for (const baseUrl of ['http://127.0.0.1:3000', 'http://localhost:3000', 'http://[::1]:3000']) {
      expect(() => new Longhaul({ baseUrl })).not.toThrow();
    }
    expect(
      () => new Longhaul({ baseUrl: 'http://api.example.test', apiKey: 'k', allowInsecureHttp: true }),
    ).not.toThrow();
  });
});

describe('listing as items', () => {
  const page = (ids: string[], nextCursor: string | null) => () =>
    new Response(JSON.stringify({ items: ids.map(job), nextCursor }), {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });

  it('yields jobs across pages with for await', async () => {
    const transport = scriptedFetch([page(['job_a', 'job_b'], 'c1'), page(['job_c'], null)]);
    const ids: string[] = [];
    for await (const item of client(transport).longhaul.listJobs({ limit: 2 })) ids.push(item.id);
    expect(ids).toEqual(['job_a', 'job_b', 'job_c']);
  });

  it('collects at most a total with toArray, asking for no more than it needs', async () => {
    const transport = scriptedFetch([page(['job_a', 'job_b'], 'c1'), page(['job_c'], 'c2')]);
    const items = await client(transport).longhaul.listJobs({ limit: 2 }).toArray({ limit: 3 });
    expect(items.map((item) => item.id)).toEqual(['job_a', 'job_b', 'job_c']);
    expect(transport.sent.map((s) => s.url)).toEqual([
      `${BASE}/v1/jobs?limit=2`,
      `${BASE}/v1/jobs?limit=1&cursor=c1`,
    ]);
  });

  it('stops fetching when the loop breaks', async () => {
    const transport = scriptedFetch([page(['job_a', 'job_b'], 'c1')]);
    for await (const item of client(transport).longhaul.listJobs()) {
      expect(item.id).toBe('job_a');
      break;
    }
    expect(transport.sent).toHaveLength(1);
  });
});

describe('uploads', () => {
  const ticket =
    (body: unknown, status = 201) =>
    () =>
      new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  const stored = (etag: string) => () => new Response(null, { status: 200, headers: { etag } });
  const bytes = (n: number) => new Uint8Array(n).map((_, i) => i & 0xff);

  it('sends a large file in parts, retrying a failed part alone, and resumes from a saved state', async () => {
    const size = MULTIPART_UPLOAD_THRESHOLD_BYTES + 1;
    const multipart = {
      ref: 'upl_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      uploadId: 'u1',
      partSizeBytes: 16 * 1024 * 1024,
      parts: [1, 2, 3].map((partNumber) => ({ partNumber, uploadUrl: `https://s3.test/p${partNumber}` })),
      expiresAt: new Date(Date.now() + 600_000).toISOString(),
    };
    const transport = scriptedFetch([
      ticket(multipart),
      stored('"e1"'),
      networkError,
      stored('"e3"'),
      stored('"e2"'),
      ticket({ ref: multipart.ref }, 200),
    ]);
    const states: unknown[] = [];
    const { longhaul } = client(transport);
    const uploaded = await longhaul.uploadFile(
      { data: bytes(size), contentType: 'audio/wav' },
      { onUploadProgress: (p) => states.push(p.state) },
    );
    expect(uploaded.ref).toBe(multipart.ref);
    const puts = transport.sent.filter((s) => s.method === 'PUT');
    expect(puts.map((s) => s.url)).toEqual([
      'https://s3.test/p1',
      'https://s3.test/p2',
      'https://s3.test/p3',
      'https://s3.test/p2',
    ]);
    // No API key goes to the storage URLs.
    expect(puts.every((s) => s.headers.get('x-api-key') === null)).toBe(true);
    expect(puts.map((s) => (s.body as Uint8Array).byteLength)).toEqual([
      16 * 1024 * 1024,
      16 * 1024 * 1024,
      1,
      16 * 1024 * 1024,
    ]);
    const complete = transport.sent.at(-1)!;
    expect(complete.url).toBe(`${BASE}/v1/uploads/${multipart.ref}/complete`);
    expect(JSON.parse(complete.body as string)).toEqual({
      uploadId: 'u1',
      parts: [
        { partNumber: 1, etag: '"e1"' },
        { partNumber: 2, etag: '"e2"' },
        { partNumber: 3, etag: '"e3"' },
      ],
    });

    // A later run, from the state saved after the first part: the missing parts only.
    const resumed = scriptedFetch([stored('"e2"'), stored('"e3"'), ticket({ ref: multipart.ref }, 200)]);
    await client(resumed).longhaul.uploadFile(
      { data: bytes(size), contentType: 'audio/wav' },
      { resume: states[0] as never },
    );
    expect(resumed.sent.map((s) => s.url)).toEqual([
      'https://s3.test/p2',
      'https://s3.test/p3',
      `${BASE}/v1/uploads/${multipart.ref}/complete`,
    ]);
  });

  describe('renews part URLs that expired', () => {
    const size = MULTIPART_UPLOAD_THRESHOLD_BYTES + 1;
    const ref = 'upl_cccccccccccccccccccccccccccccccc';
    const later = () => new Date(Date.now() + 900_000).toISOString();
    const saved = (expiresAt: string, stored: number[]) => ({
      ref,
      uploadId: 'u1',
      partSizeBytes: 16 * 1024 * 1024,
      expiresAt,
      parts: [1, 2, 3].map((partNumber) => ({
        partNumber,
        uploadUrl: `https://s3.test/old/p${partNumber}`,
        etag: stored.includes(partNumber) ? `"e${partNumber}"` : null,
      })),
    });
    const renewed = (partNumbers: number[], expiresAt: string) =>
      ticket(
        {
          ref,
          uploadId: 'u1',
          partSizeBytes: 16 * 1024 * 1024,
          parts: partNumbers.map((partNumber) => ({
            partNumber,
            uploadUrl: `https://s3.test/new/p${partNumber}`,
          })),
          expiresAt,
        },
        200,
      );
    // What S3 answers for a presigned URL past its expiry.
    const expired = () =>
      new Response('<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>', {
        status: 403,
        headers: { 'content-type': 'application/xml' },
      });

    it('resumes a saved state past its expiresAt with fresh URLs for the missing parts, asked for once', async () => {
      const expiresAt = later();
      const transport = scriptedFetch([
        renewed([2, 3], expiresAt),
        stored('"e2"'),
        stored('"e3"'),
        ticket({ ref }, 200),
      ]);
      const states: { expiresAt: string; parts: { uploadUrl: string }[] }[] = [];
      const uploaded = await client(transport).longhaul.uploadFile(
        { data: bytes(size), contentType: 'audio/wav' },
        {
          resume: saved(new Date(Date.now() - 1000).toISOString(), [1]),
          onUploadProgress: (p) => states.push(p.state as never),
        },
      );
      expect(transport.sent.map((s) => `${s.method} ${s.url}`)).toEqual([
        `POST ${BASE}/v1/uploads/${ref}/parts`,
        'PUT https://s3.test/new/p2',
        'PUT https://s3.test/new/p3',
        `POST ${BASE}/v1/uploads/${ref}/complete`,
      ]);
      expect(JSON.parse(transport.sent[0]?.body as string)).toEqual({
        uploadId: 'u1',
        contentLength: size,
        partNumbers: [2, 3],
      });
      expect(JSON.parse(transport.sent[3]?.body as string).parts).toEqual([
        { partNumber: 1, etag: '"e1"' },
        { partNumber: 2, etag: '"e2"' },
        { partNumber: 3, etag: '"e3"' },
      ]);
      // The state to save carries the renewed URLs and their expiry.
      expect(states.at(-1)?.expiresAt).toBe(expiresAt);
      expect(states.at(-1)?.parts.map((part) => part.uploadUrl)).toEqual([
        'https://s3.test/old/p1',
        'https://s3.test/new/p2',
        'https://s3.test/new/p3',
      ]);
      expect(uploaded).toEqual({ ref, expiresAt });
    });

    it('renews the URL of a part that S3 refuses, once', async () => {
      const transport = scriptedFetch([expired, renewed([3], later()), stored('"e3"'), ticket({ ref }, 200)]);
      await client(transport).longhaul.uploadFile(
        { data: bytes(size), contentType: 'audio/wav' },
        { resume: saved(later(), [1, 2]) },
      );
      expect(transport.sent.map((s) => `${s.method} ${s.url}`)).toEqual([
        'PUT https://s3.test/old/p3',
        `POST ${BASE}/v1/uploads/${ref}/parts`,
        'PUT https://s3.test/new/p3',
        `POST ${BASE}/v1/uploads/${ref}/complete`,
      ]);
      expect(JSON.parse(transport.sent[1]?.body as string).partNumbers).toEqual([3]);

      const refusedTwice = scriptedFetch([expired, renewed([3], later()), expired]);
      await expect(
        client(refusedTwice).longhaul.uploadFile(
          { data: bytes(size), contentType: 'audio/wav' },
          { resume: saved(later(), [1, 2]) },
        ),
      ).rejects.toBeInstanceOf(PermissionDeniedError);
      expect(refusedTwice.sent).toHaveLength(3);
    });
  });

  it('gives a single PUT a timeout that grows with its size', async () => {
    const size = 8 * 1024 * 1024;
    const transport = scriptedFetch([
      ticket({
        ref: 'upl_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb',
        uploadUrl: 'https://s3.test/put',
        expiresAt: 'x',
      }),
    ]);
    /** The job and the PUT answer after 150 ms, unless their attempt is abandoned first. */
    const slow = (async (input: string | URL | Request, init?: RequestInit) => {
      if (String(input).endsWith('/v1/uploads')) return transport.fetch(input, init);
      return new Promise<Response>((resolve, reject) => {
        const timer = setTimeout(() => resolve(stored('"e"')()), 150);
        init?.signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(init.signal?.reason);
        });
      });
    }) as typeof globalThis.fetch;
    const { longhaul } = client(transport, { fetch: slow, timeoutMs: 50, maxRetries: 0 });
    // 150 ms is beyond a plain request's 50 ms…
    await expect(longhaul.getJob('job_aaaaaaaaaaaaaaaaaaaaaaaaaa')).rejects.toBeInstanceOf(
      LonghaulConnectionError,
    );
    // …but 8 MiB get 50 ms plus 64 s (at 128 KiB/s, the slowest speed allowed).
    const uploaded = await longhaul.uploadFile({ data: bytes(size), contentType: 'image/png' });
    expect(uploaded.ref).toBe('upl_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb');
  });
});
