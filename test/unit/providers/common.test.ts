import { ProviderDownError, ProviderThrottledError } from '../../../lambdas/domain/errors';
import { neverReached, submissionFailure } from '../../../lambdas/providers/common';

/** How undici reports a network failure: `TypeError: fetch failed` with the socket's error as its cause. */
const fetchFailed = (cause: unknown) => Object.assign(new TypeError('fetch failed'), { cause });
const socketError = (code: string) => Object.assign(new Error(code), { code });

describe('neverReached', () => {
  it.each(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'UND_ERR_CONNECT_TIMEOUT'])(
    'knows %s sent nothing',
    (code) => {
      expect(neverReached(fetchFailed(socketError(code)))).toBe(true);
    },
  );

  it('knows a refusal on every address tried sent nothing', () => {
    const refused = Object.assign(
      new AggregateError([socketError('ECONNREFUSED'), socketError('ECONNREFUSED')]),
      {
        code: 'ECONNREFUSED',
      },
    );

    expect(neverReached(fetchFailed(refused))).toBe(true);
  });

  it.each([
    ['a reset', fetchFailed(socketError('ECONNRESET'))],
    ['a closed socket', fetchFailed(socketError('UND_ERR_SOCKET'))],
    ['a timeout', new DOMException('The operation was aborted due to timeout', 'TimeoutError')],
    ['an error without a cause', new TypeError('fetch failed')],
  ])('cannot rule out that %s reached the provider', (_, error) => {
    expect(neverReached(error)).toBe(false);
  });
});

describe('submissionFailure', () => {
  it('tells a throttle (429), which lowers the rate, from an outage (503), which only pauses, each with the wait it names', () => {
    const throttled = submissionFailure('replicate', {
      kind: 'answered',
      status: 429,
      retryAfterSeconds: 30,
    });
    expect(throttled).toBeInstanceOf(ProviderThrottledError);
    expect(throttled).toMatchObject({ name: 'ProviderUnavailable', retryAfterSeconds: 30 });
    const down = submissionFailure('replicate', { kind: 'answered', status: 503, retryAfterSeconds: 5 });
    expect(down).toBeInstanceOf(ProviderDownError);
    expect(down).not.toBeInstanceOf(ProviderThrottledError);
    expect(down).toMatchObject({ retryAfterSeconds: 5 });
  });

  it.each([
    [{ kind: 'unsent', message: 'refused' } as const, { name: 'ProviderUnavailable' }],
    [{ kind: 'lost', message: 'reset' } as const, { name: 'ProviderAmbiguous' }],
    [{ kind: 'answered', status: 408 } as const, { name: 'ProviderAmbiguous' }],
    [{ kind: 'answered', status: 409 } as const, { name: 'ProviderRejected', code: 'provider_rejected_409' }],
    [{ kind: 'answered', status: 502 } as const, { name: 'ProviderAmbiguous' }],
    [{ kind: 'answered', status: 302 } as const, { name: 'ProviderAmbiguous' }],
    [undefined, { name: 'ProviderRejected', code: 'provider_request_invalid' }],
  ])('turns %j into %j', (exchange, expected) => {
    expect(submissionFailure('replicate', exchange)).toMatchObject(expected);
  });
});
