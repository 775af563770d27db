import { IdempotencyKeyMissingError, type ValidationError } from '../../lambdas/domain/errors';
import {
  MAX_BATCH_ITEMS,
  parseBatch,
  parseCreateJob,
  parseCreateUpload,
  parseListJobs,
  webhookUrlProblem,
} from '../../lambdas/domain/requests';
import { errorsOf } from './support/validation';

const NOW = new Date('2030-01-01T00:00:00.000Z');
const strict = { allowPrivateWebhooks: false, scheduleMaxAheadDays: 365, now: () => NOW };
const local = { ...strict, allowPrivateWebhooks: true };

describe('parseCreateJob', () => {
  const cat = { type: 'image.generate', input: { prompt: 'a cat' } };
  const RUN_AT_FORMAT = 'must be an RFC 3339 date-time with a time zone offset, e.g. 2030-01-31T09:00:00Z';

  it.each([
    ['UTC', '2030-03-01T12:00:00Z', '2030-03-01T12:00:00.000Z'],
    ['an offset, as the same instant in UTC', '2030-03-01T12:00:00.250-05:30', '2030-03-01T17:30:00.250Z'],
    ['a past instant, kept: the job runs now', '2029-01-01T00:00:00Z', '2029-01-01T00:00:00.000Z'],
    ['exactly the furthest day ahead', '2031-01-01T00:00:00Z', '2031-01-01T00:00:00.000Z'],
  ])('takes a runAt in %s', (_, runAt, expected) => {
    expect(parseCreateJob({ ...cat, runAt }, strict)).toEqual({ ...cat, runAt: expected });
  });

  it.each([
    ['a date without a time', '2030-03-01'],
    ['a time without an offset', '2030-03-01T12:00:00'],
    ['words', 'tomorrow'],
    ['an impossible date', '2030-02-31T12:00:00Z'],
    ['a number', 1_900_000_000],
    ['null', null],
  ])('refuses a runAt that is %s, pointing at it', (_, runAt) => {
    expect(errorsOf(() => parseCreateJob({ ...cat, runAt }, strict))).toEqual([
      { pointer: '/runAt', detail: RUN_AT_FORMAT },
    ]);
  });

  it('refuses a runAt beyond scheduleMaxAheadDays from now, naming the limit', () => {
    expect(errorsOf(() => parseCreateJob({ ...cat, runAt: '2031-01-01T00:00:00.001Z' }, strict))).toEqual([
      {
        pointer: '/runAt',
        detail: 'must be at most 365 days ahead (no later than 2031-01-01T00:00:00.000Z)',
      },
    ]);
    expect(
      errorsOf(() =>
        parseCreateJob({ ...cat, runAt: '2030-01-03T00:00:00Z' }, { ...strict, scheduleMaxAheadDays: 1 }),
      ),
    ).toEqual([
      { pointer: '/runAt', detail: 'must be at most 1 days ahead (no later than 2030-01-02T00:00:00.000Z)' },
    ]);
  });

  it('takes a startBy as the instant it names in UTC, after runAt', () => {
    expect(parseCreateJob({ ...cat, startBy: '2030-01-01T01:00:00+00:30' }, strict)).toEqual({
      ...cat,
      startBy: '2030-01-01T00:30:00.000Z',
    });
    expect(
      parseCreateJob(
        { ...cat, runAt: '2030-01-02T00:00:00Z', startBy: '2030-01-02T06:00:00.5+02:00' },
        strict,
      ),
    ).toEqual({ ...cat, runAt: '2030-01-02T00:00:00.000Z', startBy: '2030-01-02T04:00:00.500Z' });
  });

  it.each([
    ['not a date', 'soon', RUN_AT_FORMAT],
    ['now', '2030-01-01T00:00:00Z', 'must be in the future (after 2030-01-01T00:00:00.000Z)'],
    ['in the past', '2029-12-31T23:59:59Z', 'must be in the future (after 2030-01-01T00:00:00.000Z)'],
  ])('refuses a startBy that is %s, pointing at it', (_, startBy, detail) => {
    expect(errorsOf(() => parseCreateJob({ ...cat, startBy }, strict))).toEqual([
      { pointer: '/startBy', detail },
    ]);
  });

  it('refuses a startBy at or before the runAt: the job would end before it is due', () => {
    for (const startBy of ['2030-01-02T00:00:00Z', '2030-01-01T12:00:00Z']) {
      expect(
        errorsOf(() => parseCreateJob({ ...cat, runAt: '2030-01-02T00:00:00Z', startBy }, strict)),
      ).toEqual([{ pointer: '/startBy', detail: 'must be after runAt (2030-01-02T00:00:00.000Z)' }]);
    }
  });

  it('accepts a minimal image job', () => {
    expect(parseCreateJob({ type: 'image.generate', input: { prompt: 'a cat' } }, strict)).toEqual({
      type: 'image.generate',
      input: { prompt: 'a cat' },
    });
  });

  it('accepts an audio job with exactly one source and a language', () => {
    const request = {
      type: 'audio.transcribe',
      input: { audioUrl: 'https://example.com/a.mp3', language: 'pt-BR' },
    };
    expect(parseCreateJob(request, strict).input).toEqual(request.input);
  });

  it.each([
    ['an unknown type', { type: 'video.render', input: {} }, '/type'],
    ['a missing type', { input: { prompt: 'x' } }, '/type'],
    ['input that is not an object', { type: 'image.generate', input: 'a cat' }, '/input'],
    ['an empty prompt', { type: 'image.generate', input: { prompt: '' } }, '/input/prompt'],
    [
      'a prompt over 4000 characters',
      { type: 'image.generate', input: { prompt: 'x'.repeat(4001) } },
      '/input/prompt',
    ],
    ['a width below 64', { type: 'image.generate', input: { prompt: 'x', width: 63 } }, '/input/width'],
    [
      'a height above 2048',
      { type: 'image.generate', input: { prompt: 'x', height: 2049 } },
      '/input/height',
    ],
    ['a fractional width', { type: 'image.generate', input: { prompt: 'x', width: 100.5 } }, '/input/width'],
    [
      'a width given as a string',
      { type: 'image.generate', input: { prompt: 'x', width: '512' } },
      '/input/width',
    ],
    ['an unknown input field', { type: 'image.generate', input: { prompt: 'x', seed: 1 } }, '/input'],
    ['an unknown top-level field', { type: 'image.generate', input: { prompt: 'x' }, urgency: 1 }, ''],
    [
      'an unknown priority',
      { type: 'image.generate', input: { prompt: 'x' }, priority: 'high' },
      '/priority',
    ],
    [
      'a priority that is not a string',
      { type: 'image.generate', input: { prompt: 'x' }, priority: 1 },
      '/priority',
    ],
    ['a null priority', { type: 'image.generate', input: { prompt: 'x' }, priority: null }, '/priority'],
    [
      'a malformed upload ref',
      { type: 'image.generate', input: { prompt: 'x', sourceImageRef: 's3://x' } },
      '/input/sourceImageRef',
    ],
    [
      'an http audio URL',
      { type: 'audio.transcribe', input: { audioUrl: 'http://example.com/a.mp3' } },
      '/input/audioUrl',
    ],
    ['no audio source', { type: 'audio.transcribe', input: {} }, '/input'],
    [
      'two audio sources',
      {
        type: 'audio.transcribe',
        input: { audioUrl: 'https://example.com/a.mp3', audioRef: `upl_${'a'.repeat(32)}` },
      },
      '/input',
    ],
    [
      'a bad language tag',
      { type: 'audio.transcribe', input: { audioUrl: 'https://e.com/a', language: 'english!' } },
      '/input/language',
    ],
  ])('refuses %s, pointing at %s', (_, body, pointer) => {
    const errors = errorsOf(() => parseCreateJob(body, strict));
    expect(errors.map((e) => e.pointer)).toContain(pointer);
  });

  it.each(['interactive', 'standard', 'batch'])('keeps the priority %s as asked', (priority) => {
    expect(parseCreateJob({ type: 'image.generate', input: { prompt: 'x' }, priority }, strict)).toEqual({
      type: 'image.generate',
      input: { prompt: 'x' },
      priority,
    });
  });

  it('names the priorities there are when one is unknown', () => {
    expect(
      errorsOf(() =>
        parseCreateJob({ type: 'image.generate', input: { prompt: 'x' }, priority: 'urgent' }, strict),
      ),
    ).toEqual([{ pointer: '/priority', detail: 'must be one of interactive, standard, batch' }]);
  });

  it('names unknown fields in the error', () => {
    const errors = errorsOf(() =>
      parseCreateJob({ type: 'image.generate', input: { prompt: 'x', seed: 1 } }, strict),
    );
    expect(errors).toEqual([{ pointer: '/input', detail: 'unknown field(s): seed' }]);
  });

  it('refuses a webhook to a private address unless allowed', () => {
    const body = { type: 'image.generate', input: { prompt: 'x' }, webhookUrl: 'http://127.0.0.1:9000/hook' };
    expect(errorsOf(() => parseCreateJob(body, strict))).toEqual([
      { pointer: '/webhookUrl', detail: 'must be an https URL' },
    ]);
    expect(parseCreateJob(body, local).webhookUrl).toBe(body.webhookUrl);
  });
});

describe('webhookUrlProblem', () => {
  it.each([
    'https://127.0.0.1/x',
    'https://localhost/x',
    'https://10.1.2.3/x',
    'https://172.16.0.1/x',
    'https://192.168.1.1/x',
    'https://169.254.169.254/latest',
    'https://[::1]/x',
    'https://[fd00::1]/x',
    'https://[::ffff:127.0.0.1]/x',
  ])('refuses %s by default', (url) => {
    expect(webhookUrlProblem(url, strict)).toBe('must not target a loopback, link-local or private address');
  });

  it('accepts a public https target and refuses credentials, other schemes and relative URLs', () => {
    expect(webhookUrlProblem('https://hooks.example.com/longhaul', strict)).toBeUndefined();
    expect(webhookUrlProblem('https://user:pw@example.com/', strict)).toBe('must not carry credentials');
    expect(webhookUrlProblem('ftp://example.com/', local)).toBe('must be an http or https URL');
    expect(webhookUrlProblem('/hook', strict)).toBe('must be an absolute URL');
  });
});

describe('parseListJobs', () => {
  it('defaults the limit to 20', () => {
    expect(parseListJobs({})).toEqual({ limit: 20 });
  });

  it('reads status, limit and cursor', () => {
    expect(parseListJobs({ status: 'queued', limit: '100', cursor: 'abc' })).toEqual({
      status: 'queued',
      limit: 100,
      cursor: 'abc',
    });
  });

  it.each([
    [{ limit: '0' }, 'limit'],
    [{ limit: '101' }, 'limit'],
    [{ limit: 'ten' }, 'limit'],
    [{ limit: '2.5' }, 'limit'],
    [{ status: 'done' }, 'status'],
  ])('refuses %j naming the parameter', (query, parameter) => {
    expect(errorsOf(() => parseListJobs(query)).map((e) => e.parameter)).toEqual([parameter]);
  });

  it('refuses unknown parameters', () => {
    expect(errorsOf(() => parseListJobs({ sort: 'asc' }))[0]?.detail).toBe('unknown field(s): sort');
  });
});

describe('parseCreateUpload', () => {
  it('accepts an audio upload within the limit', () => {
    expect(parseCreateUpload({ contentType: 'audio/mpeg', contentLength: 1000 }, 1000)).toEqual({
      contentType: 'audio/mpeg',
      contentLength: 1000,
    });
  });

  it('refuses an upload over the limit and other media types', () => {
    expect(
      errorsOf(() => parseCreateUpload({ contentType: 'audio/mpeg', contentLength: 1001 }, 1000)),
    ).toEqual([{ pointer: '/contentLength', detail: 'must be at most 1000 bytes' }]);
    expect(
      errorsOf(() => parseCreateUpload({ contentType: 'text/html', contentLength: 10 }, 1000)).map(
        (e) => e.pointer,
      ),
    ).toEqual(['/contentType']);
  });
});

describe('parseBatch', () => {
  const cat = { type: 'image.generate', input: { prompt: 'a cat' } };
  const errorOf = (entry: object) => (entry as { error: unknown }).error;

  it('parses each item as a single submission, its key as the Idempotency-Key header', () => {
    expect(parseBatch({ items: [{ idempotencyKey: 'k1', ...cat, priority: 'batch' }] }, strict)).toEqual([
      {
        idempotencyKey: 'k1',
        entry: { idempotencyKey: 'k1', request: { ...cat, priority: 'batch' } },
      },
    ]);
  });

  it("takes an item's startBy as a single submission's, and refuses a past one alone, pointing into the batch", () => {
    const items = parseBatch(
      {
        items: [
          { idempotencyKey: 'a', ...cat, startBy: '2030-01-01T00:10:00Z' },
          { idempotencyKey: 'b', ...cat, startBy: '2029-12-31T00:00:00Z' },
        ],
      },
      strict,
    );
    expect(items[0]?.entry).toEqual({
      idempotencyKey: 'a',
      request: { ...cat, startBy: '2030-01-01T00:10:00.000Z' },
    });
    expect((errorOf(items[1]?.entry as object) as ValidationError).errors).toEqual([
      { pointer: '/items/1/startBy', detail: 'must be in the future (after 2030-01-01T00:00:00.000Z)' },
    ]);
  });

  it('refuses an invalid item alone, with pointers into the batch, and keeps the valid ones', () => {
    const items = parseBatch(
      {
        items: [
          { idempotencyKey: 'a', ...cat },
          {
            idempotencyKey: 'b',
            type: 'image.generate',
            input: { prompt: '' },
            webhookUrl: 'http://10.0.0.1/x',
          },
          { idempotencyKey: 'c', ...cat, colour: 'red' },
          'not an object',
        ],
      },
      strict,
    );

    expect(items.map((item) => item.idempotencyKey)).toEqual(['a', 'b', 'c', null]);
    expect('request' in items[0]!.entry).toBe(true);
    expect((errorOf(items[1]!.entry) as ValidationError).errors.map((e) => e.pointer)).toEqual([
      '/items/1/input/prompt',
    ]);
    expect((errorOf(items[2]!.entry) as ValidationError).errors).toEqual([
      { pointer: '/items/2', detail: 'unknown field(s): colour' },
    ]);
    expect((errorOf(items[3]!.entry) as ValidationError).errors).toEqual([
      { pointer: '/items/3', detail: 'must be an object' },
    ]);
  });

  it('takes runAt on an item as a single submission does, and refuses a bad one with a pointer into the batch', () => {
    const [scheduled, late, bad] = parseBatch(
      {
        items: [
          { idempotencyKey: 'a', ...cat, runAt: '2030-01-02T09:00:00+02:00' },
          { idempotencyKey: 'b', ...cat, runAt: '2031-01-02T00:00:00Z' },
          { idempotencyKey: 'c', ...cat, runAt: 'next tuesday' },
        ],
      },
      strict,
    );
    expect(scheduled!.entry).toEqual({
      idempotencyKey: 'a',
      request: { ...cat, runAt: '2030-01-02T07:00:00.000Z' },
    });
    expect((errorOf(late!.entry) as ValidationError).errors).toEqual([
      {
        pointer: '/items/1/runAt',
        detail: 'must be at most 365 days ahead (no later than 2031-01-01T00:00:00.000Z)',
      },
    ]);
    expect((errorOf(bad!.entry) as ValidationError).errors).toEqual([
      {
        pointer: '/items/2/runAt',
        detail: 'must be an RFC 3339 date-time with a time zone offset, e.g. 2030-01-31T09:00:00Z',
      },
    ]);
  });

  it('refuses a missing or malformed key as a single submission without the header is refused', () => {
    const items = parseBatch(
      { items: [{ ...cat }, { idempotencyKey: 'has space', ...cat }, { idempotencyKey: 7, ...cat }] },
      strict,
    );
    expect(items.map((item) => item.idempotencyKey)).toEqual([null, 'has space', null]);
    for (const item of items) expect(errorOf(item.entry)).toBeInstanceOf(IdempotencyKeyMissingError);
    expect((errorOf(items[1]!.entry) as Error).message).toBe(
      'The idempotencyKey of /items/1 must be 1 to 255 visible ASCII characters.',
    );
  });

  it.each([
    ['no items', {}],
    ['an empty list', { items: [] }],
    ['too many items', { items: Array.from({ length: MAX_BATCH_ITEMS + 1 }, () => ({})) }],
    ['items that are not a list', { items: { a: 1 } }],
    ['a field beside items', { items: [{}], dryRun: true }],
    ['a list', [{}]],
  ])('refuses the whole batch for %s', (_name, body) => {
    expect(errorsOf(() => parseBatch(body, strict)).length).toBeGreaterThan(0);
  });

  it('names the limit when the batch is too long', () => {
    expect(errorsOf(() => parseBatch({ items: Array(MAX_BATCH_ITEMS + 1).fill({}) }, strict))).toEqual([
      { pointer: '/items', detail: 'must be an array of 1 to 1000 job requests' },
    ]);
  });
});
