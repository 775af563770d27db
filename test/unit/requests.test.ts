import { ValidationError } from '../../lambdas/domain/errors';
import {
  parseCreateJob,
  parseCreateUpload,
  parseListJobs,
  webhookUrlProblem,
} from '../../lambdas/domain/requests';

const strict = { allowPrivateWebhooks: false };
const local = { allowPrivateWebhooks: true };

function errorsOf(fn: () => unknown) {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).errors;
  }
  throw new Error('expected a ValidationError');
}

describe('parseCreateJob', () => {
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
