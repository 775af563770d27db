import { bodyLimits, LAMBDA_SYNC_REQUEST_BYTES } from '../../config/settings';
import { type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';

/**
 * Bodies the REST API takes (up to 10 MiB) but that cannot reach the api
 * function: Lambda refuses an event over 6 MB, and a multipart body travels
 * base64-encoded in it. Each gets 413 `payload-too-large`, as does a body that
 * reaches the function over the product's multipart limit. The provider
 * events function's URL has Lambda's limit alone, which is the function's
 * too: past it Lambda answers itself, below it the function reads the body.
 */

jest.setTimeout(120_000);

const KEY = 'payload-key-2c7e';
let stack: RunningLocalStack;

beforeAll(async () => {
  stack = await startLocalStack({ env: { LONGHAUL_API_KEYS: `${KEY}:acme` } });
});
afterAll(async () => {
  await stack?.stop();
});

/** A multipart job request of exactly `bytes`, its file part padded to fill it. */
function multipart(bytes: number): { body: Buffer; contentType: string } {
  const boundary = 'payload-limit-boundary';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="type"\r\n\r\nimage.generate\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="input"\r\n\r\n{"prompt":"big"}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const file = Buffer.alloc(bytes - head.length - tail.length, 7);
  return {
    body: Buffer.concat([head, file, tail]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

async function post(bytes: number) {
  const { body, contentType } = multipart(bytes);
  const response = await fetch(`${stack.baseUrl}/v1/jobs`, {
    method: 'POST',
    headers: { 'x-api-key': KEY, 'idempotency-key': `big-${bytes}`, 'content-type': contentType },
    body,
  });
  return { status: response.status, body: (await response.json()) as { code?: string } };
}

test('a multipart body just under 4.5 MiB, over 6 MB once base64-encoded, gets 413', async () => {
  const bytes = 4.5 * 1024 * 1024 - 1024;
  expect(Math.ceil(bytes / 3) * 4).toBeGreaterThan(LAMBDA_SYNC_REQUEST_BYTES - 2048);
  expect(await post(bytes)).toEqual({
    status: 413,
    body: expect.objectContaining({ code: 'payload-too-large' }),
  });
});

test('a multipart body that reaches the function over the multipart limit gets 413', async () => {
  expect(await post(bodyLimits.multipartBytes + 1)).toEqual({
    status: 413,
    body: expect.objectContaining({ code: 'payload-too-large' }),
  });
});

describe('the provider events URL', () => {
  const postEvent = (body: Buffer, contentType: string) =>
    fetch(
      `${stack.endpoints.functionUrls['provider-events']}v1/provider/events?jobId=job_${'a'.repeat(26)}`,
      {
        method: 'POST',
        headers: { 'content-type': contentType },
        body,
      },
    );

  test("a body of 2 MB, a Deepgram callback's for an hour of speech, reaches the function and is judged by what it says", async () => {
    const response = await postEvent(Buffer.alloc(2 * 1024 * 1024, 0x20), 'application/json');
    // Unsigned, so refused: by the function, for its signature, not for its size.
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(await response.json()).toMatchObject({ code: 'unauthorized' });
  });

  test.each([
    ['of 6.5 MB', 6.5 * 1024 * 1024, 'application/json'],
    ['of 4.8 MB that is not text (base64-encoded, over 6 MB)', 4.8 * 1024 * 1024, 'image/png'],
  ])('a body %s never reaches the function: Lambda answers 413 itself', async (_, bytes, contentType) => {
    const response = await postEvent(Buffer.alloc(bytes, 0x20), contentType);
    expect(response.status).toBe(413);
    expect(response.headers.get('x-amzn-errortype')).toBe('RequestEntityTooLargeException');
    expect(await response.json()).toEqual({
      Message: `Request must be smaller than ${LAMBDA_SYNC_REQUEST_BYTES} bytes for the InvokeFunction operation`,
    });
  });
});
