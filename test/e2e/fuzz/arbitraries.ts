import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { signPayload } from '../../../lambdas/shared/signature';
import { ADMIN_KEY, KEY, OTHER_KEY, PROVIDER_SECRET } from './stack';

/**
 * What the fuzz suite sends: fast-check arbitraries of requests, or parts of
 * requests, that a client gets wrong (or that an attacker crafts), each
 * certainly invalid unless its name says otherwise. Arbitraries that aim at
 * the finished jobs a test file made are built in that file.
 */

/** Strings with everything that trips decoders: lone surrogates, astral characters, controls, NUL. */
export const nastyString = (maxLength = 64) =>
  fc.oneof(
    fc.string({ maxLength, unit: 'binary' }),
    fc.string({ maxLength, unit: 'grapheme' }),
    fc.constantFrom(
      '',
      ' ',
      '\u0000',
      '\ud800',
      '\udfff',
      'a\ud83dz',
      '\u202e',
      '\ufeff',
      '../../etc/passwd',
      '%00',
      '\u0024{jndi:ldap://x}',
      '<script>',
      "' OR 1=1 --",
      '__proto__',
      'constructor',
    ),
  );

/** JSON text, including what JSON.stringify never writes: lone-surrogate escapes, huge numbers, duplicate keys. */
export const jsonText = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
  fc.constantFrom(
    '',
    ' ',
    'null',
    'true',
    '"\\ud800"',
    '{"type":"image.generate","input":{"prompt":"\\udc00"}}',
    '{"type":"image.generate","type":"audio.transcribe","input":{}}',
    '{"__proto__":{"polluted":true},"type":"image.generate","input":{}}',
    '{"constructor":{"prototype":{"x":1}}}',
    '1e309',
    '-0',
    '[',
    '{"a":',
    '{"a":1}}',
    '\ufeff{}',
    '{"input":{"prompt":"x","width":1e400}}',
  ),
  fc.nat({ max: 20_000 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
  fc.nat({ max: 20_000 }).map((depth) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
);

export const randomBytes = fc.oneof(
  fc.uint8Array({ maxLength: 512 }).map((bytes) => Buffer.from(bytes)),
  fc.constantFrom(
    Buffer.from([0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00]),
    Buffer.from([0xc3, 0x28]),
    Buffer.from([0xed, 0xa0, 0x80]),
    Buffer.from([0xf4, 0x90, 0x80, 0x80]),
    Buffer.alloc(0),
    Buffer.from('{"type":"image.generate","input":{"prompt":"\u00e9"}}', 'latin1'),
    Buffer.from('{"type":"image.generate","input":{"prompt":"hi"}}', 'utf16le'),
    gzipSync('{"type":"image.generate","input":{"prompt":'),
  ),
);

/** A count where the API wants an integer of at least 1 (`null` aside: for the cap it means none). */
const badCount = fc.oneof(
  fc.integer({ max: 0 }),
  fc.double({ noInteger: true }).filter(Number.isFinite),
  fc.constantFrom('1', true, [], {}, 2 ** 60),
);

/** Tenant settings that are invalid in at least one way, as JSON text: a PUT of them must change nothing. */
export const invalidTenantSettings = fc.oneof(
  fc
    .record({
      valid: fc.record(
        {
          weight: fc.integer({ min: 1, max: 100 }),
          maxInFlight: fc.option(fc.integer({ min: 1, max: 50 }), { nil: null }),
          maxQueued: fc.integer({ min: 1, max: 1_000_000 }),
        },
        { requiredKeys: [] },
      ),
      defect: fc.oneof(
        fc
          .oneof(
            fc.integer({ max: 0 }),
            fc.integer({ min: 101 }),
            fc.double({ noInteger: true }),
            fc.constantFrom(null, '5', true, [], 2 ** 60),
          )
          .map((weight) => ({ weight })),
        badCount.map((maxInFlight) => ({ maxInFlight })),
        fc.oneof(badCount, fc.constant(null)).map((maxQueued) => ({ maxQueued })),
        fc
          .tuple(
            fc
              .string({ minLength: 1, maxLength: 12 })
              .filter((k) => !['weight', 'maxInFlight', 'maxQueued'].includes(k)),
            fc.jsonValue({ maxDepth: 2 }),
          )
          .map(([key, value]) => ({ [key]: value })),
      ),
    })
    .map(({ valid, defect }) => JSON.stringify({ ...valid, ...defect })),
  fc.constantFrom(
    '',
    'null',
    '[]',
    '[{"weight":1}]',
    '"weight"',
    '1',
    'true',
    '{',
    '{"weight":1,"weight":0}',
  ),
);

/** A fresh Idempotency-Key, valid and never used before. */
export const validKey = () => `fuzz-${Math.random().toString(36).slice(2)}-${Date.now()}`;

/**
 * A job request that is certainly invalid: a well-shaped body with exactly the
 * kind of defect a client makes (so the interesting code paths run), or any JSON.
 */
export const invalidJobBody = fc.oneof(
  fc
    .record({
      type: fc.constantFrom('image.generate', 'audio.transcribe'),
      prompt: nastyString(32).filter((s) => s.length > 0),
      defect: fc.constantFrom(
        'unknown-field',
        'unknown-input-field',
        'empty-prompt',
        'long-prompt',
        'lone-surrogate',
        'small-width',
        'float-height',
        'string-width',
        'input-array',
        'input-null',
        'bad-type',
        'bad-webhook',
        'credential-webhook',
        'both-sources',
        'no-source',
        'http-audio',
        'bad-language',
        'bad-ref',
        'long-webhook',
        'bad-priority',
      ),
    })
    .map(({ type, prompt, defect }) => {
      const input: Record<string, unknown> =
        type === 'image.generate' ? { prompt } : { audioUrl: 'https://media.example.com/a.mp3' };
      const body: Record<string, unknown> = { type, input };
      switch (defect) {
        case 'unknown-field':
          body.urgency = 'high';
          break;
        case 'bad-priority':
          body.priority = `x${prompt}`;
          break;
        case 'unknown-input-field':
          input.seed = 42;
          break;
        case 'empty-prompt':
          body.type = 'image.generate';
          body.input = { prompt: '' };
          break;
        case 'long-prompt':
          body.type = 'image.generate';
          body.input = { prompt: 'p'.repeat(4001) };
          break;
        case 'lone-surrogate':
          body.type = 'image.generate';
          body.input = { prompt: `a${'\ud800'}b` };
          break;
        case 'small-width':
          body.type = 'image.generate';
          body.input = { prompt: 'x', width: 63 };
          break;
        case 'float-height':
          body.type = 'image.generate';
          body.input = { prompt: 'x', height: 100.5 };
          break;
        case 'string-width':
          body.type = 'image.generate';
          body.input = { prompt: 'x', width: '512' };
          break;
        case 'input-array':
          body.input = [input];
          break;
        case 'input-null':
          body.input = null;
          break;
        case 'bad-type':
          body.type = `${type}.v2`;
          break;
        case 'bad-webhook':
          body.webhookUrl = 'ftp://example.com/hook';
          break;
        case 'credential-webhook':
          body.webhookUrl = 'https://user:pass@example.com/hook';
          break;
        case 'both-sources':
          body.type = 'audio.transcribe';
          body.input = { audioUrl: 'https://media.example.com/a.mp3', audioRef: `upl_${'a'.repeat(22)}` };
          break;
        case 'no-source':
          body.type = 'audio.transcribe';
          body.input = { language: 'en' };
          break;
        case 'http-audio':
          body.type = 'audio.transcribe';
          body.input = { audioUrl: 'http://media.example.com/a.mp3' };
          break;
        case 'bad-language':
          body.type = 'audio.transcribe';
          body.input = {
            audioUrl: 'https://media.example.com/a.mp3',
            language: prompt.includes('-') ? '' : `1${prompt}`,
          };
          break;
        case 'bad-ref':
          body.type = 'image.generate';
          body.input = { prompt: 'x', sourceImageRef: `upl_${prompt}` };
          break;
        case 'long-webhook':
          body.webhookUrl = `https://example.com/${'w'.repeat(2048)}`;
          break;
      }
      return JSON.stringify(body);
    }),
  fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
  jsonText,
);

/** What a header value is once on the wire: Node sends tab, printable ASCII and Latin-1 only, and HTTP trims the ends. */
const onTheWire = (value: string): string => value.replace(/[^\t\x20-\x7e\x80-\xff]/g, '');
const received = (value: string): string => onTheWire(value).replace(/^[\t ]+|[\t ]+$/g, '');

/** Idempotency-Key values the contract refuses (1..255 visible ASCII is the rule), as the server receives them. */
export const invalidIdempotencyKey = fc
  .oneof(
    fc.constantFrom('', ' ', 'a b', '\t', 'k'.repeat(256), 'caf\u00e9', '\u00ff\u00fe', 'key\u0080', 'a\tb'),
    fc.string({ minLength: 1, maxLength: 40 }).map((s) => `${s} ${s}`),
    fc.string({ minLength: 1, maxLength: 40, unit: 'binary' }),
    fc.integer({ min: 256, max: 8192 }).map((length) => 'x'.repeat(length)),
  )
  .map(onTheWire)
  .filter((key) => !/^[\x21-\x7e]{1,255}$/.test(received(key)));

export const apiKeyJunk = fc
  .oneof(
    fc.constantFrom(
      '',
      ' ',
      KEY.toUpperCase(),
      `${KEY}\u00e9`,
      `${KEY}x`,
      KEY.slice(1),
      'null',
      'undefined',
      'Bearer x',
    ),
    fc.string({ maxLength: 64 }),
    fc.integer({ min: 1000, max: 8000 }).map((length) => 'k'.repeat(length)),
  )
  .map(onTheWire)
  .filter((key) => ![KEY, OTHER_KEY, ADMIN_KEY].includes(received(key)));

/** Header values Node can put on the wire (tab, printable ASCII and Latin-1; no CR, LF or NUL). */
export const headerValue = fc.oneof(
  fc.string({ maxLength: 80 }).map((s) => s.replace(/[^\t\x20-\x7e]/g, '')),
  fc.string({ maxLength: 40, unit: 'binary' }).map((s) => s.replace(/[^\t\x20-\x7e\xa0-\xff]/g, '')),
);

export const contentTypes = fc.oneof(
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset=utf-16',
    'application/json; charset=latin1',
    'APPLICATION/JSON',
    'application/json;;;',
    'application/json; boundary=x',
    'application/problem+json',
    'application/vnd.api+json',
    'text/json',
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/octet-stream',
    'multipart/form-data',
    'multipart/form-data; boundary=',
    'multipart/form-data; boundary=xyz',
    'multipart/mixed; boundary=xyz',
    '*/*',
    '',
    ';',
    'json',
  ),
  headerValue,
);

export const contentEncodings = fc.constantFrom(
  undefined,
  'gzip',
  'br',
  'deflate',
  'identity',
  'gzip, gzip',
  'x-unknown',
  'base64',
  '',
);

/** Multipart bodies that are broken somehow: malformed framing, bad parts, or a valid frame around a bad request. */
export const brokenMultipart = fc
  .record({
    boundary: fc.constantFrom('b0undary', 'x', '----WebKitFormBoundary7MA4YWxkTrZu0gW', 'a'.repeat(70)),
    framing: fc.constantFrom('ok', 'no-close', 'wrong-boundary', 'no-crlf', 'truncated-headers', 'garbage'),
    parts: fc.array(
      fc.record({
        name: fc.constantFrom('type', 'input', 'webhookUrl', 'file', 'extra', '', 'in"put'),
        value: fc.oneof(
          fc.constantFrom(
            'image.generate',
            'audio.transcribe',
            '{"prompt":"x"}',
            '{"prompt":"\\ud800"}',
            '{}',
          ),
          jsonText,
          fc.string({ maxLength: 64 }),
        ),
        filename: fc.option(fc.constantFrom('a.png', 'a.mp3', '', '../../x', 'x\u00e9.bin'), {
          nil: undefined,
        }),
        contentType: fc.option(
          fc.constantFrom('image/png', 'audio/mpeg', 'text/plain', 'application/json', ''),
          {
            nil: undefined,
          },
        ),
      }),
      { maxLength: 6 },
    ),
  })
  .map(({ boundary, framing, parts }) => {
    const crlf = framing === 'no-crlf' ? '\n' : '\r\n';
    let body = '';
    for (const part of parts) {
      body += `--${framing === 'wrong-boundary' ? `${boundary}X` : boundary}${crlf}`;
      const disposition = `Content-Disposition: form-data; name="${part.name}"${
        part.filename !== undefined ? `; filename="${part.filename}"` : ''
      }`;
      body += framing === 'truncated-headers' ? disposition.slice(0, 20) : disposition;
      if (part.contentType !== undefined) body += `${crlf}Content-Type: ${part.contentType}`;
      body += `${crlf}${crlf}${part.value}${crlf}`;
    }
    if (framing !== 'no-close') body += `--${boundary}--${crlf}`;
    if (framing === 'garbage') body = `\u0000\u00ff${body.split('').reverse().join('')}`;
    return {
      contentType: `multipart/form-data; boundary=${boundary}`,
      body: Buffer.from(body, 'utf8'),
      parts,
      framing,
    };
  })
  // A well-framed form with exactly the fields of a valid request (and no file) would be a valid request.
  .filter(({ framing, parts }) => {
    if (framing !== 'ok' && framing !== 'no-close') return true;
    const names = parts.map((part) => part.name);
    const type = parts.find((part) => part.name === 'type')?.value;
    const input = parts.find((part) => part.name === 'input')?.value;
    const plausible =
      names.every((name) => ['type', 'input', 'webhookUrl', 'file'].includes(name)) &&
      new Set(names).size === names.length &&
      (type === 'image.generate' || type === 'audio.transcribe') &&
      input !== undefined &&
      !input.includes('\\ud800');
    return !plausible;
  });

/** Path segments that are not a job id of the caller, including traversal and encoding tricks. */
export const junkId = fc.oneof(
  fc.constantFrom(
    '..',
    '.',
    '%2e%2e',
    '%2E%2E%2F%2E%2E',
    '..%2F..%2Fadmin',
    '%2F',
    '%00',
    '%',
    '%zz',
    '%ED%A0%80',
    '%C0%AE%C0%AE',
    'job_',
    'job_aaaaaaaaaaaaaaaaaaaaaaaaaa',
    'JOB_AAAAAAAAAAAAAAAAAAAAAAAAAA',
    'job_aaaaaaaaaaaaaaaaaaaaaaaaa1',
    'SLOTS',
    'null',
    '*',
    '~',
    '%20',
    '+',
  ),
  fc
    .string({ minLength: 1, maxLength: 40, unit: 'binary' })
    .map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, 'x'))),
  fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }).map((s) => encodeURIComponent(s)),
  fc.integer({ min: 256, max: 8000 }).map((length) => 'j'.repeat(length)),
);

export const queryValue = fc.oneof(
  fc.constantFrom(
    '',
    '0',
    '-1',
    '1',
    '100',
    '101',
    '1e2',
    '1e309',
    'NaN',
    'Infinity',
    '0x10',
    '%205',
    '5abc',
    '1.5',
    '9007199254740993',
    'queued',
    'QUEUED',
    'succeeded',
    'needs_review',
    'running,failed',
    '%',
    '%zz',
    '%00',
    '+',
    '%2B',
  ),
  fc.string({ maxLength: 40 }).map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, 'x'))),
  fc.integer({ min: 2049, max: 8000 }).map((length) => 'c'.repeat(length)),
);

/** Cursors: junk, and forged ones that pass the shape check with hostile content. */
export const cursorValue = fc.oneof(
  queryValue,
  fc
    .record({
      id: fc.oneof(
        nastyString(64).filter((s) => s.length > 0),
        fc.constantFrom('SLOTS', 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa'),
      ),
      createdAt: fc.constantFrom(
        '2026-01-01T00:00:00.000Z',
        '1970-01-01T00:00:00Z',
        '9999-12-31T23:59:59.999Z',
      ),
      extra: fc.boolean(),
    })
    .map(({ id, createdAt, extra }) =>
      Buffer.from(
        JSON.stringify({ id, createdAt, ...(extra ? { tenantId: 'globex' } : {}) }),
        'utf8',
      ).toString('base64url'),
    ),
  fc.jsonValue({ maxDepth: 2 }).map((value) => Buffer.from(JSON.stringify(value)).toString('base64url')),
);

export const queryString = (names: readonly string[], value: fc.Arbitrary<string>) =>
  fc
    .array(
      fc.tuple(
        fc.oneof(fc.constantFrom(...names), fc.constantFrom('', '%', 'a%zz', 'status[]', '__proto__')),
        value,
      ),
      {
        maxLength: 5,
      },
    )
    .map((pairs) => (pairs.length ? `?${pairs.map(([name, v]) => `${name}=${v}`).join('&')}` : ''));

/** Bodies of POST /v1/uploads that are invalid somehow: a ticket request with bad fields, or any JSON under any type. */
export const invalidUploadRequest = fc.oneof(
  fc
    .record({
      contentType: fc.oneof(
        nastyString(40),
        fc.constantFrom('image/png', 'audio/mpeg', 'image/', 'video/mp4'),
      ),
      contentLength: fc.oneof(
        fc.constantFrom(0, -1, 1.5, 2 ** 53, 2 ** 60, Number.MAX_VALUE, 512 * 1024 * 1024 + 1, '1', null),
        fc.integer(),
      ),
      extra: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }),
    })
    .map(({ contentType, contentLength, extra }) => ({
      text: JSON.stringify({ contentType, contentLength, ...(extra !== undefined ? { extra } : {}) }),
      contentType: 'application/json',
    })),
  fc.record({
    text: jsonText,
    contentType: fc.constantFrom('application/json', 'text/plain', 'multipart/form-data'),
  }),
);

/** Bodies of an operator's resolution: any JSON, or an outcome and note that may be junk. */
export const resolutionBody = fc.oneof(
  jsonText,
  fc
    .record({
      outcome: fc.oneof(fc.constantFrom('succeeded', 'failed', 'requeue', 'SUCCEEDED', ''), nastyString(10)),
      note: fc.oneof(nastyString(40), fc.constant('n'.repeat(5000))),
    })
    .map((value) => JSON.stringify(value)),
);

/** Tenant names in an admin path: the two tenants of the stack, near misses of them, and junk. */
export const tenantName = fc.oneof(
  fc.constantFrom('acme', 'globex', 'nobody', 'admin', 'Acme', 'acme.', '-acme', `t${'x'.repeat(64)}`),
  junkId,
);

/** Header names the API reads, in other spellings, and some it does not. */
export const headerName = fc.constantFrom(
  'X-API-Key',
  'x-api-key',
  'X-API-KEY',
  'Idempotency-Key',
  'Content-Type',
  'Content-Encoding',
  'Accept',
  'Accept-Encoding',
  'Authorization',
  'X-Forwarded-For',
  'X-Forwarded-Proto',
  'Host',
  'Provider-Signature',
  'Expect',
  'X-Amzn-RequestId',
  'Cookie',
  'X-Junk',
);

/** HTTP methods, the API's and others, in any case. */
export const anyMethod = fc.constantFrom(
  'GET',
  'POST',
  'PUT',
  'DELETE',
  'PATCH',
  'OPTIONS',
  'HEAD',
  'TRACE',
  'PROPFIND',
  'get',
);

/** Paths near the API's routes and far from them: doubled slashes, dot segments, encodings, deep nesting. */
export const oddPath = fc.oneof(
  fc.constantFrom(
    '/',
    '//',
    '/v1',
    '/v1/',
    '/V1/JOBS',
    '/v1/jobs/',
    '//v1/jobs',
    '/v1//jobs',
    '/v1/jobs/../jobs',
    '/v1/./jobs',
    '/v1/jobs%2F',
    '/v1/jobs;x=1',
    '/v2/jobs',
    '/v1/provider/events/',
    '/v1/stream',
    '/healthz/',
    '/openapi.json/x',
    '/%2e%2e/%2e%2e/etc/passwd',
    '/v1/admin/jobs/x/resolve/x',
    `/${'a/'.repeat(500)}`,
    '/*',
  ),
  fc.array(junkId, { minLength: 1, maxLength: 5 }).map((segments) => `/${segments.join('/')}`),
);

/** Provider events that are invalid, as JSON text: any JSON, or a well-shaped event with one defect. */
export const invalidProviderEvent = fc.oneof(
  jsonText,
  fc
    .record({
      type: fc.constantFrom('progress', 'succeeded', 'failed', 'canceled'),
      defect: fc.constantFrom(
        'type',
        'no-id',
        'empty-id',
        'progress-high',
        'progress-negative',
        'progress-string',
        'no-at',
        'at-number',
        'error-missing',
        'error-long-code',
        'array',
      ),
      id: nastyString(20).filter((s) => s.length > 0),
    })
    .map(({ type, defect, id }) => {
      const event: Record<string, unknown> = { type, id, at: new Date().toISOString() };
      if (type === 'progress') event.progress = 50;
      if (type === 'failed') event.error = { code: 'x', message: 'y' };
      switch (defect) {
        case 'type':
          event.type = `${type}!`;
          break;
        case 'no-id':
          delete event.id;
          break;
        case 'empty-id':
          event.id = '';
          break;
        case 'progress-high':
          Object.assign(event, { type: 'progress', progress: 100.5 });
          break;
        case 'progress-negative':
          Object.assign(event, { type: 'progress', progress: -1 });
          break;
        case 'progress-string':
          Object.assign(event, { type: 'progress', progress: '50' });
          break;
        case 'no-at':
          delete event.at;
          break;
        case 'at-number':
          event.at = 1;
          break;
        case 'error-missing':
          Object.assign(event, { type: 'failed' });
          delete event.error;
          break;
        case 'error-long-code':
          Object.assign(event, { type: 'failed', error: { code: 'c'.repeat(101), message: 'm' } });
          break;
        case 'array':
          return JSON.stringify([event]);
      }
      return JSON.stringify(event);
    }),
);

const now = () => Math.floor(Date.now() / 1000);

/**
 * Provider-Signature headers for `body`, each of a kind: missing, malformed,
 * stale (more than 300 s either side), made with a wrong secret or over
 * another body, or valid.
 */
export const providerSignature = (body: string) =>
  fc.oneof(
    fc.constant({ kind: 'missing' as const }),
    fc.record({ kind: fc.constant('malformed' as const), header: headerValue }),
    fc.record({
      kind: fc.constant('malformed' as const),
      header: fc.constantFrom(
        't=,v1=',
        'v1=00',
        `t=${now()}`,
        `t=${now()},v1=${'0'.repeat(63)}`,
        `t=${now()},v1=${'G'.repeat(64)}`,
        `t=${now()}.5,v1=${'0'.repeat(64)}`,
        `t=-${now()},v1=${'0'.repeat(64)}`,
        `t=${'9'.repeat(13)},v1=${'0'.repeat(64)}`,
        `=${now()}`,
        ',,,',
        `${signPayload(PROVIDER_SECRET, body, now())}`.toUpperCase(),
        `${signPayload(PROVIDER_SECRET, body, now())}${',v1=0'.repeat(200)}`,
      ),
    }),
    fc.record({
      kind: fc.constant('stale' as const),
      header: fc
        .oneof(fc.integer({ min: 301, max: 10 ** 9 }), fc.integer({ min: -(10 ** 6), max: -301 }))
        .map((offset) => signPayload(PROVIDER_SECRET, body, now() - offset)),
    }),
    fc.record({
      kind: fc.constant('wrong-secret' as const),
      header: fc
        .constantFrom('dev-provider-webhook-secret', `${PROVIDER_SECRET}x`, '', PROVIDER_SECRET.toUpperCase())
        .map((secret) => signPayload(secret, body, now())),
    }),
    fc.record({
      kind: fc.constant('other-body' as const),
      header: fc.constant(signPayload(PROVIDER_SECRET, `${body} `, now())),
    }),
    fc.record({
      kind: fc.constant('valid' as const),
      header: fc.constant(signPayload(PROVIDER_SECRET, body, now())),
    }),
  );

/** Well-formed provider events of every type, with any id, output and time. */
export const wellFormedProviderEvent = fc.oneof(
  fc.record({
    type: fc.constant('progress'),
    id: fc.string({ minLength: 1 }),
    progress: fc.double({ min: 0, max: 100, noNaN: true }),
    at: fc.string(),
  }),
  fc.record({
    type: fc.constant('succeeded'),
    id: fc.string({ minLength: 1 }),
    output: fc.jsonValue({ maxDepth: 3 }),
    at: fc.string(),
  }),
  fc.record({
    type: fc.constant('failed'),
    id: fc.string({ minLength: 1 }),
    error: fc.record({ code: fc.string({ maxLength: 100 }), message: fc.string({ maxLength: 200 }) }),
    at: fc.string(),
  }),
  fc.record({ type: fc.constant('canceled'), id: fc.string({ minLength: 1 }), at: fc.string() }),
);
