import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import WebSocket from 'ws';
import { signPayload } from '../../lambdas/shared/signature';
import {
  documentClient,
  pollUntil,
  queueDepth,
  type RunningLocalStack,
  s3Client,
  sqsClient,
  startLocalStack,
} from '../../local/harness/local-stack';

/**
 * Property-based fuzzing of every door into the local stack: the HTTP API's
 * routes, headers, path and query parameters, the provider webhook and the
 * WebSocket handshake. Whatever arrives, the answer is never a 5xx, never
 * shows a stack trace or an internal path, every 4xx is an RFC 9457 problem
 * with a contract code, and a request the API refuses changes nothing: the
 * job table, the queues, the input bucket, the subscriptions and the
 * provider's ledger look the same afterwards, item for item.
 *
 * Each property runs with its own fixed seed (printed; FUZZ_SEED moves the
 * base, FUZZ_RUNS_SCALE multiplies every run count), and a failure names the
 * seed and the path of the shrunk counterexample. The stack's output goes to
 * a log file in the temporary directory, whose name is printed.
 */

jest.setTimeout(240_000);

const KEY = 'fuzz-key-3f9a1c';
const OTHER_KEY = 'fuzz-other-key-77b2e0';
const ADMIN_KEY = 'fuzz-admin-key-c41d08';
const PROVIDER_SECRET = 'fuzz-provider-webhook-secret-9d2e';
const BASE_SEED = Number(process.env.FUZZ_SEED ?? 20_260_401);
const RUN_SCALE = Number(process.env.FUZZ_RUNS_SCALE ?? 1);

/** Each property's seed follows from the base seed and its name, so running one property alone (-t) replays it. */
const seedOf = (name: string): number =>
  (BASE_SEED + Number.parseInt(createHash('sha256').update(name).digest('hex').slice(0, 6), 16)) % 2 ** 31;

/** Every problem code a 4xx may carry (CONTRACT section 1, plus the two that config/problems.ts adds), with its status. */
const CLIENT_PROBLEMS: Readonly<Record<string, number>> = {
  'idempotency-key-missing': 400,
  'validation-failed': 400,
  unauthorized: 401,
  forbidden: 403,
  'not-found': 404,
  'idempotency-key-in-use': 409,
  'job-already-finished': 409,
  'job-not-in-review': 409,
  'job-not-resumable': 409,
  'payload-too-large': 413,
  'unsupported-media-type': 415,
  'idempotency-key-reused': 422,
  'rate-limited': 429,
};

/** What must never reach a client: stack frames, source locations, paths on the server, runtime error names. */
const LEAKS: readonly RegExp[] = [
  /\bat [^\n()]*\([^\n()]*:\d+:\d+\)/,
  /\bat (?:file:\/\/)?\/[^\s]+:\d+:\d+/,
  /\/work\//,
  /node_modules/,
  /\.(?:ts|js|mjs|cjs):\d+/,
  /\b(?:TypeError|ReferenceError|RangeError|InternalError|AggregateError)\b/,
  /Cannot read propert/,
  /\b(?:ValidationException|ResourceNotFoundException|ConditionalCheckFailedException|SerializationException)\b/,
  /\b(?:dynalite|fauxqs|ECONNREFUSED|ECONNRESET)\b/,
];

// ---------------------------------------------------------------------------------------------
// A raw HTTP client: exact bytes, repeated header lines, any method and path.

interface RawRequest {
  readonly method: string;
  /** Sent as is: the generators encode what Node refuses to send. */
  readonly path: string;
  /** Repeated names are sent as repeated header lines. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body?: Buffer;
}

interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

function send(baseUrl: string, req: RawRequest): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  const flat: string[] = [];
  const named = (wanted: string) => req.headers.some(([name]) => name.toLowerCase() === wanted);
  // With headers given as a list, Node adds neither: the client sends them as any HTTP/1.1 client would.
  if (!named('host')) flat.push('Host', `${hostname}:${port}`);
  if (!named('content-length') && !named('transfer-encoding'))
    flat.push('Content-Length', String(req.body?.length ?? 0));
  for (const [name, value] of req.headers) flat.push(name, value);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      { host: hostname, port, method: req.method, path: req.path, headers: flat, agent, timeout: 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error('no answer within 30 s')));
    outgoing.on('error', reject);
    outgoing.end(req.body);
  });
}

const describeRequest = (req: RawRequest): string => {
  const body = req.body ?? Buffer.alloc(0);
  const shown =
    body.length > 600 ? `${body.subarray(0, 600).toString('latin1')}… (${body.length} bytes)` : body;
  return `${req.method} ${req.path.length > 300 ? `${req.path.slice(0, 300)}… (${req.path.length} chars)` : req.path}\n${req.headers
    .map(
      ([name, value]) =>
        `${name}: ${value.length > 200 ? `${value.slice(0, 200)}… (${value.length} chars)` : value}`,
    )
    .join('\n')}\n\n${String(shown)}`;
};

/** The properties every answer has, whatever was asked. Returns the parsed problem of a 4xx. */
function checkAnswer(req: RawRequest, res: RawResponse): { code?: string } {
  const text = res.body.toString('utf8');
  const context = () =>
    `\n--- request ---\n${describeRequest(req)}\n--- answer ${res.status} ---\n${text.slice(0, 2000)}`;
  if (res.status >= 500 || res.status < 100) throw new Error(`server error ${res.status}${context()}`);
  const asked = `${req.path}\n${req.headers.map(([n, v]) => `${n}: ${v}`).join('\n')}\n${
    req.body?.toString('latin1') ?? ''
  }\n${req.body?.toString('utf8') ?? ''}`;
  for (const leak of LEAKS) {
    const found = leak.exec(text)?.[0];
    // An echo of the client's own bytes is no leak.
    if (found && !asked.includes(found))
      throw new Error(`internal detail ${JSON.stringify(found)}${context()}`);
  }
  if (res.status < 400) return {};
  const contentType = res.headers['content-type'] ?? '';
  if (!contentType.startsWith('application/problem+json'))
    throw new Error(`a ${res.status} that is not application/problem+json (${contentType})${context()}`);
  if (req.method === 'HEAD') return {};
  let problem: { type?: unknown; title?: unknown; status?: unknown; detail?: unknown; code?: unknown };
  try {
    problem = JSON.parse(text);
  } catch {
    throw new Error(`a problem body that is not JSON${context()}`);
  }
  const code = String(problem.code);
  if (CLIENT_PROBLEMS[code] !== res.status)
    throw new Error(
      `code ${JSON.stringify(problem.code)} does not belong to status ${res.status}${context()}`,
    );
  if (problem.status !== res.status || problem.type !== `urn:longhaul:problem:${code}`)
    throw new Error(`problem status or type do not match the answer${context()}`);
  if (typeof problem.title !== 'string' || typeof problem.detail !== 'string')
    throw new Error(`problem without title or detail${context()}`);
  if (res.status === 429 && !res.headers['retry-after'])
    throw new Error(`429 without Retry-After${context()}`);
  return { code };
}

/** API Gateway refuses a request line and headers over 10240 bytes before any route; the fuzz stays below. */
const API_GATEWAY_HEAD_LIMIT = 10_240;

const headSize = (req: RawRequest): number =>
  req.method.length +
  req.path.length +
  req.headers.reduce((sum, [name, value]) => sum + name.length + value.length + 4, 0);

const clip = (text: string, max = 400) =>
  text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;

/**
 * fc.assert, with a report that stays readable when the counterexample holds
 * a 8000-character header: the seed and path to replay, the shrunk value
 * clipped, and the failure (which names the request and the answer).
 */
async function check<T>(property: fc.IAsyncProperty<T>, params: { seed: number; numRuns: number }) {
  const details = await fc.check(property, params);
  if (!details.failed) return;
  const error =
    details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  // Once the stack has died every run fails alike, so what fast-check shrank to means nothing.
  const counterexample = error.startsWith('the local stack exited')
    ? '(meaningless: the stack had died)'
    : details.counterexample
      ? clip(fc.stringify(details.counterexample), 1200)
      : '(none: the run was interrupted)';
  throw new Error(
    `property failed after ${details.numRuns} run(s); replay with seed ${details.seed}, path "${details.counterexamplePath}"\n` +
      `counterexample (shrunk ${details.numShrinks} times): ${counterexample}\n${clip(error, 4000)}`,
  );
}

// ---------------------------------------------------------------------------------------------
// The footprint: everything a request could change, to compare before and after.

interface Footprint {
  /** Job-table items by key, each as a digest of its attributes. */
  readonly items: ReadonlyMap<string, string>;
  readonly jobs: number;
  readonly connections: number;
  readonly queued: number;
  readonly deadLetters: number;
  readonly inputs: number;
  readonly charges: number;
}

const stable = (_key: string, value: unknown) =>
  value instanceof Set ? [...value].map(String).sort() : value;

/** One set of SDK clients per stack, made once, as a long-lived caller keeps them. */
const clientCache = new WeakMap<
  RunningLocalStack,
  {
    dynamodb: ReturnType<typeof documentClient>;
    sqs: ReturnType<typeof sqsClient>;
    s3: ReturnType<typeof s3Client>;
  }
>();
function clientsOf(stack: RunningLocalStack) {
  let clients = clientCache.get(stack);
  if (!clients) {
    clients = {
      dynamodb: documentClient(stack.endpoints),
      sqs: sqsClient(stack.endpoints),
      s3: s3Client(stack.endpoints),
    };
    clientCache.set(stack, clients);
  }
  return clients;
}

async function scanAll(stack: RunningLocalStack, table: string): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await clientsOf(stack).dynamodb.send(
      new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: start }),
    );
    items.push(...((page.Items ?? []) as Record<string, unknown>[]));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

async function footprint(stack: RunningLocalStack): Promise<Footprint> {
  const { endpoints } = stack;
  const [jobItems, connections, queued, deadLetters, inputs, ledger] = await Promise.all([
    scanAll(stack, endpoints.jobTableName),
    scanAll(stack, endpoints.connectionTableName),
    queueDepth(clientsOf(stack).sqs, endpoints.jobQueueUrl),
    queueDepth(clientsOf(stack).sqs, endpoints.deadLetterQueueUrl),
    clientsOf(stack)
      .s3.send(new ListObjectsV2Command({ Bucket: endpoints.inputBucketName }))
      .then((page) => page.KeyCount ?? 0),
    fetch(`${endpoints.providerUrl}/_sim/ledger`).then(
      (r) => r.json() as Promise<{ submissions: unknown[] }>,
    ),
  ]);
  const items = new Map<string, string>();
  for (const item of jobItems) {
    // A tenant's backlog counter and its recount mark are the reconciler's, which recounts in the
    // background between any two snapshots; a request that admitted a job shows as that job's item.
    const { backlog: _backlog, backlogCheck: _backlogCheck, ...own } = item;
    const digest = createHash('sha256')
      .update(JSON.stringify(Object.fromEntries(Object.entries(own).sort()), stable))
      .digest('hex');
    items.set(`${item.pk} ${item.sk}`, digest);
  }
  return {
    items,
    jobs: jobItems.filter((item) => item.sk === 'JOB').length,
    connections: connections.length,
    queued,
    deadLetters,
    inputs,
    charges: ledger.submissions.length,
  };
}

function footprintChanges(before: Footprint, after: Footprint): string[] {
  const changes: string[] = [];
  for (const [key, digest] of after.items) {
    if (!before.items.has(key)) changes.push(`item added: ${key}`);
    else if (before.items.get(key) !== digest) changes.push(`item changed: ${key}`);
  }
  for (const key of before.items.keys()) if (!after.items.has(key)) changes.push(`item removed: ${key}`);
  for (const name of ['jobs', 'connections', 'queued', 'deadLetters', 'inputs', 'charges'] as const) {
    if (before[name] !== after[name]) changes.push(`${name}: ${before[name]} -> ${after[name]}`);
  }
  return changes;
}

// ---------------------------------------------------------------------------------------------
// Generators.

/** Strings with everything that trips decoders: lone surrogates, astral characters, controls, NUL. */
const nastyString = (maxLength = 64) =>
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
const jsonText = fc.oneof(
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

const randomBytes = fc.oneof(
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
const invalidTenantSettings = fc.oneof(
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

const validKey = () => `fuzz-${Math.random().toString(36).slice(2)}-${Date.now()}`;

/**
 * A job request that is certainly invalid: a well-shaped body with exactly the
 * kind of defect a client makes (so the interesting code paths run), or any JSON.
 */
const invalidJobBody = fc.oneof(
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
const invalidIdempotencyKey = fc
  .oneof(
    fc.constantFrom('', ' ', 'a b', '\t', 'k'.repeat(256), 'caf\u00e9', '\u00ff\u00fe', 'key\u0080', 'a\tb'),
    fc.string({ minLength: 1, maxLength: 40 }).map((s) => `${s} ${s}`),
    fc.string({ minLength: 1, maxLength: 40, unit: 'binary' }),
    fc.integer({ min: 256, max: 8192 }).map((length) => 'x'.repeat(length)),
  )
  .map(onTheWire)
  .filter((key) => !/^[\x21-\x7e]{1,255}$/.test(received(key)));

const apiKeyJunk = fc
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
const headerValue = fc.oneof(
  fc.string({ maxLength: 80 }).map((s) => s.replace(/[^\t\x20-\x7e]/g, '')),
  fc.string({ maxLength: 40, unit: 'binary' }).map((s) => s.replace(/[^\t\x20-\x7e\xa0-\xff]/g, '')),
);

const contentTypes = fc.oneof(
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

const contentEncodings = fc.constantFrom(
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
const brokenMultipart = fc
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
const junkId = fc.oneof(
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

const queryValue = fc.oneof(
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
const cursorValue = fc.oneof(
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

const queryString = (names: readonly string[], value: fc.Arbitrary<string>) =>
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

// ---------------------------------------------------------------------------------------------

/** The finished jobs the properties aim at: one of each final status, and another tenant's. */
const FIXTURE_REQUESTS = {
  failed: { apiKey: KEY, idem: 'fuzz-fixture-failed', prompt: 'rejected by the provider' },
  succeeded: { apiKey: KEY, idem: 'fuzz-fixture-succeeded', prompt: 'a lighthouse' },
  others: { apiKey: OTHER_KEY, idem: 'fuzz-fixture-others', prompt: 'another tenant' },
  canceled: { apiKey: KEY, idem: 'fuzz-fixture-canceled', prompt: 'to be canceled' },
} as const;

type Fixture = Record<keyof typeof FIXTURE_REQUESTS, string>;

describe('fuzzing the local stack', () => {
  let stack: RunningLocalStack;
  let fixture: Fixture;
  /** Set once the stack's process has exited: whatever was asked last killed it. */
  let exited = false;
  let killedBy: string | undefined;

  const api = (req: RawRequest) => send(stack.baseUrl, req);

  /**
   * Runs one request of a property. If the stack dies on it, the failure says
   * so and names that request: every later run (fast-check's shrinking
   * included) only finds the port closed, which says nothing.
   */
  async function attempt(what: () => string, run: () => Promise<void>): Promise<void> {
    if (killedBy !== undefined) throw new Error(`the local stack exited while answering:\n${killedBy}`);
    try {
      await run();
    } catch (error) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (exited) {
        killedBy = what();
        const fatal = stack
          .output()
          .split('\n')
          .filter((line) => /fatal|^\s+at /.test(line))
          .slice(0, 8);
        throw new Error(
          `the local stack exited while answering:\n${killedBy}\n--- its last words ---\n${fatal.join('\n')}`,
        );
      }
      throw error;
    }
  }

  beforeAll(async () => {
    stack = await startLocalStack({
      env: {
        LONGHAUL_API_KEYS: `${KEY}:acme,${OTHER_KEY}:globex`,
        LONGHAUL_ADMIN_KEY: ADMIN_KEY,
        PROVIDER_WEBHOOK_SECRET: PROVIDER_SECRET,
        API_RATE_LIMIT: '5000',
        API_BURST_LIMIT: '5000',
        SIM_JOB_MS: '200',
        PROVIDER_TIMEOUT_MS: '1000',
        SLOT_WAIT_MAX_SECONDS: '1',
      },
    });
    void stack.exited.then(() => {
      exited = true;
    });
    const sim = (path: string, body: unknown) =>
      fetch(`${stack.endpoints.providerUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const submit = async (name: keyof typeof FIXTURE_REQUESTS) => {
      const { apiKey, idem, prompt } = FIXTURE_REQUESTS[name];
      const res = await api({
        method: 'POST',
        path: '/v1/jobs',
        headers: [
          ['X-API-Key', apiKey],
          ['Idempotency-Key', idem],
          ['Content-Type', 'application/json'],
        ],
        body: Buffer.from(JSON.stringify({ type: 'image.generate', input: { prompt } })),
      });
      expect({ status: res.status, body: res.body.toString() }).toEqual({
        status: 202,
        body: expect.any(String),
      });
      return JSON.parse(res.body.toString()).id as string;
    };
    const settled = (key: string, id: string) =>
      pollUntil(
        async () => {
          const res = await api({ method: 'GET', path: `/v1/jobs/${id}`, headers: [['X-API-Key', key]] });
          const job = JSON.parse(res.body.toString());
          return ['succeeded', 'failed', 'canceled'].includes(job.status) ? job : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100, description: `job ${id} to finish` },
      );

    // Finished jobs for the properties to aim at: one of each terminal status, and another tenant's.
    await sim('/_sim/faults', { mode: 'reject', count: 1 });
    const failed = await submit('failed');
    expect((await settled(KEY, failed)).status).toBe('failed');
    const succeeded = await submit('succeeded');
    const others = await submit('others');
    expect((await settled(KEY, succeeded)).status).toBe('succeeded');
    expect((await settled(OTHER_KEY, others)).status).toBe('succeeded');
    // Long enough to be canceled while it runs; every job before it has finished at the provider.
    await sim('/_sim/config', { jobMs: 60_000 });
    const canceled = await submit('canceled');
    await pollUntil(
      async () =>
        JSON.parse(
          (
            await api({ method: 'GET', path: `/v1/jobs/${canceled}`, headers: [['X-API-Key', KEY]] })
          ).body.toString(),
        ).status === 'running',
      { timeoutMs: 30_000, description: 'the job to cancel to run' },
    );
    const cancel = await api({
      method: 'POST',
      path: `/v1/jobs/${canceled}/cancel`,
      headers: [['X-API-Key', KEY]],
    });
    expect(cancel.status).toBe(202);
    expect((await settled(KEY, canceled)).status).toBe('canceled');
    fixture = { succeeded, failed, canceled, others };

    // Quiet: nothing queued, nothing at the provider, no slot held, and the footprint holds still.
    await pollUntil(
      async () => {
        const first = await footprint(stack);
        await new Promise((resolve) => setTimeout(resolve, 300));
        const second = await footprint(stack);
        const ledger = (await (await fetch(`${stack.endpoints.providerUrl}/_sim/ledger`)).json()) as {
          running: number;
        };
        return first.queued === 0 && ledger.running === 0 && footprintChanges(first, second).length === 0;
      },
      { timeoutMs: 30_000, intervalMs: 200, description: 'the stack to be quiet' },
    );
  });

  afterAll(async () => {
    agent.destroy();
    if (stack) {
      // Where a 5xx's stack trace is, for whoever has to fix it.
      const logFile = join(tmpdir(), `longhaul-fuzz-${BASE_SEED}.log`);
      writeFileSync(logFile, stack.output());
      process.stdout.write(`fuzz: stack output in ${logFile}\n`);
    }
    await stack?.stop();
  });

  /**
   * Runs one property with its own printed seed, and checks that the whole
   * run left no trace; `perRun` also checks after every request, so
   * fast-check can shrink a state-changing request to its smallest form.
   */
  async function fuzz<T>(
    name: string,
    arbitrary: fc.Arbitrary<T>,
    toRequest: (value: T) => RawRequest,
    options: {
      numRuns: number;
      perRun?: boolean;
      expect?: (value: T, res: RawResponse, code?: string) => void;
    },
  ) {
    const seed = seedOf(name);
    const numRuns = Math.max(1, Math.round(options.numRuns * RUN_SCALE));
    process.stdout.write(`fuzz ${name}: seed ${seed}, ${numRuns} runs\n`);
    const before = await footprint(stack);
    await check(
      fc.asyncProperty(arbitrary, async (value) => {
        const req = toRequest(value);
        // API Gateway's own cap on the request line and headers (10240 bytes); past it no route is reached.
        fc.pre(headSize(req) <= API_GATEWAY_HEAD_LIMIT);
        await attempt(
          () => describeRequest(req),
          async () => {
            // Measured around each request, so a shrunk counterexample is judged by its own effect.
            const runBefore = options.perRun ? await footprint(stack) : undefined;
            const res = await api(req);
            const { code } = checkAnswer(req, res);
            options.expect?.(value, res, code);
            if (runBefore) {
              const changes = footprintChanges(runBefore, await footprint(stack));
              if (changes.length > 0)
                throw new Error(
                  `state changed: ${changes.join('; ')}\n--- request ---\n${describeRequest(req)}`,
                );
            }
          },
        );
      }),
      { seed, numRuns },
    );
    const changes = footprintChanges(before, await footprint(stack));
    expect(changes).toEqual([]);
  }

  const auth = (key = KEY): [string, string] => ['X-API-Key', key];

  it('POST /v1/jobs refuses every invalid JSON request with a problem and creates nothing', async () => {
    await fuzz(
      'POST /v1/jobs json',
      fc.record({ body: invalidJobBody, charset: fc.constantFrom('', '; charset=utf-8', '; charset=UTF-8') }),
      ({ body, charset }) => ({
        method: 'POST',
        path: '/v1/jobs',
        headers: [auth(), ['Idempotency-Key', validKey()], ['Content-Type', `application/json${charset}`]],
        body: Buffer.from(body, 'utf8'),
      }),
      {
        numRuns: 120,
        perRun: true,
        expect: (_value, res, code) => {
          expect(res.status).toBe(400);
          expect(code).toBe('validation-failed');
        },
      },
    );
  });

  it('POST /v1/jobs survives any bytes, content type and content encoding', async () => {
    await fuzz(
      'POST /v1/jobs bytes',
      fc.record({
        body: fc.oneof(
          randomBytes,
          invalidJobBody.map((text) => Buffer.from(text)),
        ),
        contentType: fc.option(contentTypes, { nil: undefined }),
        encoding: contentEncodings,
        base64: fc.boolean(),
      }),
      ({ body, contentType, encoding, base64 }) => ({
        method: 'POST',
        path: '/v1/jobs',
        headers: [
          auth(),
          ['Idempotency-Key', validKey()],
          ...(contentType !== undefined ? [['Content-Type', contentType] as [string, string]] : []),
          ...(encoding !== undefined ? [['Content-Encoding', encoding] as [string, string]] : []),
        ],
        body: base64 ? Buffer.from(body.toString('base64')) : body,
      }),
      { numRuns: 100, perRun: true },
    );
  });

  it('POST /v1/jobs refuses a valid body under a broken Idempotency-Key or API key', async () => {
    const validBody = Buffer.from(
      JSON.stringify({ type: 'image.generate', input: { prompt: 'fuzzed headers' } }),
    );
    await fuzz(
      'POST /v1/jobs headers',
      fc.oneof(
        fc.record({ kind: fc.constant('idempotency' as const), key: invalidIdempotencyKey }),
        fc.record({ kind: fc.constant('api-key' as const), key: apiKeyJunk }),
        fc.record({
          kind: fc.constant('missing' as const),
          key: fc.constantFrom('idempotency', 'api-key', 'both'),
        }),
      ),
      (value) => {
        const headers: [string, string][] = [['Content-Type', 'application/json']];
        if (value.kind === 'idempotency') headers.push(auth(), ['Idempotency-Key', value.key]);
        if (value.kind === 'api-key') headers.push(['X-API-Key', value.key], ['Idempotency-Key', validKey()]);
        if (value.kind === 'missing') {
          if (value.key !== 'api-key' && value.key !== 'both') headers.push(auth());
          if (value.key === 'api-key') headers.push(['Idempotency-Key', validKey()]);
        }
        return { method: 'POST', path: '/v1/jobs', headers, body: validBody };
      },
      {
        numRuns: 80,
        perRun: true,
        expect: (value, res, code) => {
          if (value.kind === 'idempotency')
            expect([res.status, code]).toEqual([400, 'idempotency-key-missing']);
          if (value.kind === 'api-key') expect([res.status, code]).toEqual([401, 'unauthorized']);
          if (value.kind === 'missing')
            expect(code).toBe(value.key === 'idempotency' ? 'idempotency-key-missing' : 'unauthorized');
        },
      },
    );
  });

  it('POST /v1/jobs refuses broken multipart bodies and stores no file', async () => {
    await fuzz(
      'POST /v1/jobs multipart',
      brokenMultipart,
      ({ contentType, body }) => ({
        method: 'POST',
        path: '/v1/jobs',
        headers: [auth(), ['Idempotency-Key', validKey()], ['Content-Type', contentType]],
        body,
      }),
      { numRuns: 80, perRun: true, expect: (_value, res) => expect(res.status).toBe(400) },
    );
  });

  it('GET /v1/jobs answers any query with a page or a validation problem', async () => {
    await fuzz(
      'GET /v1/jobs query',
      fc.oneof(
        queryString(['status', 'limit', 'cursor', 'unknown'], queryValue),
        queryString(['cursor'], cursorValue),
      ),
      (query) => ({ method: 'GET', path: `/v1/jobs${query}`, headers: [auth()] }),
      {
        numRuns: 120,
        expect: (_query, res, code) => {
          if (res.status === 200) {
            const page = JSON.parse(res.body.toString());
            expect(Array.isArray(page.items)).toBe(true);
            // Whatever the cursor said, a tenant sees only its own jobs.
            expect(page.items.map((job: { id: string }) => job.id)).not.toContain(fixture.others);
          } else expect([res.status, code]).toEqual([400, 'validation-failed']);
        },
      },
    );
  });

  it('job routes answer 404 for any path parameter that is not the caller’s job, and never another tenant’s', async () => {
    const ids = () =>
      fc.oneof(
        { weight: 4, arbitrary: junkId },
        {
          weight: 1,
          arbitrary: fc.constantFrom(fixture.others, fixture.succeeded, fixture.failed, fixture.canceled),
        },
      );
    await fuzz(
      'job path parameters',
      fc.record({
        id: ids(),
        route: fc.constantFrom('get', 'events', 'cancel', 'resolve-as-tenant'),
        suffix: fc.constantFrom('', '', '', '/', '//', '/..', '?x=1', '#frag'),
      }),
      ({ id, route, suffix }) => ({
        method: route === 'get' || route === 'events' ? 'GET' : 'POST',
        path: {
          get: `/v1/jobs/${id}${suffix}`,
          events: `/v1/jobs/${id}/events${suffix}`,
          cancel: `/v1/jobs/${id}/cancel${suffix}`,
          'resolve-as-tenant': `/v1/admin/jobs/${id}/resolve${suffix}`,
        }[route],
        headers: [auth()],
      }),
      {
        numRuns: 150,
        perRun: true,
        expect: ({ id, route }, res, code) => {
          if (id === fixture.others && route !== 'resolve-as-tenant')
            expect([res.status, code]).toEqual([404, 'not-found']);
          if (route === 'resolve-as-tenant' && res.status !== 404) expect(res.status).toBe(403);
          if (res.status < 300) expect([fixture.succeeded, fixture.failed, fixture.canceled]).toContain(id);
        },
      },
    );
  });

  it('a repeated Idempotency-Key replays the first answer or is refused, and changes nothing', async () => {
    const names = Object.keys(FIXTURE_REQUESTS) as (keyof typeof FIXTURE_REQUESTS)[];
    await fuzz(
      'POST /v1/jobs replays',
      fc.record({
        name: fc.constantFrom(...names),
        same: fc.boolean(),
        // The same request in other words: key order and whitespace do not make it another request.
        spacing: fc.constantFrom(0, 2, '\t'),
        reversed: fc.boolean(),
        other: fc.oneof(
          fc.string({ minLength: 1, maxLength: 40 }).map((prompt) => ({ prompt })),
          fc.constant({ prompt: 'a lighthouse', width: 512 }),
        ),
      }),
      ({ name, same, spacing, reversed, other }) => {
        const { apiKey, idem, prompt } = FIXTURE_REQUESTS[name];
        const input = same ? { prompt } : other;
        const body = reversed ? { input, type: 'image.generate' } : { type: 'image.generate', input };
        return {
          method: 'POST',
          path: '/v1/jobs',
          headers: [
            ['X-API-Key', apiKey],
            ['Idempotency-Key', idem],
            ['Content-Type', 'application/json'],
          ],
          body: Buffer.from(JSON.stringify(body, null, spacing)),
        };
      },
      {
        numRuns: 40,
        perRun: true,
        expect: ({ name, same, other }, res, code) => {
          if (same || (other.prompt === FIXTURE_REQUESTS[name].prompt && !('width' in other))) {
            expect(res.status).toBe(202);
            expect(res.headers['idempotent-replayed']).toBe('true');
            expect(JSON.parse(res.body.toString()).id).toBe(fixture[name]);
          } else expect([res.status, code]).toEqual([422, 'idempotency-key-reused']);
        },
      },
    );
  });

  it('POST /v1/uploads refuses any invalid upload request', async () => {
    await fuzz(
      'POST /v1/uploads',
      fc.oneof(
        fc
          .record({
            contentType: fc.oneof(
              nastyString(40),
              fc.constantFrom('image/png', 'audio/mpeg', 'image/', 'video/mp4'),
            ),
            contentLength: fc.oneof(
              fc.constantFrom(
                0,
                -1,
                1.5,
                2 ** 53,
                2 ** 60,
                Number.MAX_VALUE,
                512 * 1024 * 1024 + 1,
                '1',
                null,
              ),
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
      ),
      ({ text, contentType }) => ({
        method: 'POST',
        path: '/v1/uploads',
        headers: [auth(), ['Content-Type', contentType]],
        body: Buffer.from(text, 'utf8'),
      }),
      {
        numRuns: 80,
        perRun: true,
        expect: (_value, res) => {
          if (res.status === 201) {
            const ticket = JSON.parse(res.body.toString());
            expect(ticket).toEqual({
              ref: expect.any(String),
              uploadUrl: expect.any(String),
              expiresAt: expect.any(String),
            });
          }
        },
      },
    );
  });

  it('admin routes (and the local ops view) refuse tenants and junk, and refuse invalid resolutions', async () => {
    await fuzz(
      'admin routes',
      fc.record({
        key: fc.oneof(fc.constantFrom(ADMIN_KEY, ADMIN_KEY, KEY), apiKeyJunk),
        route: fc.constantFrom('list', 'resolve', 'redrive', 'metrics', 'dashboard-events'),
        query: queryString(['status', 'limit', 'cursor'], fc.oneof(queryValue, cursorValue)),
        id: fc.oneof(
          junkId,
          fc.constantFrom(fixture.succeeded, fixture.failed, fixture.others, fixture.canceled),
        ),
        body: fc.oneof(
          jsonText,
          fc
            .record({
              outcome: fc.oneof(
                fc.constantFrom('succeeded', 'failed', 'requeue', 'SUCCEEDED', ''),
                nastyString(10),
              ),
              note: fc.oneof(nastyString(40), fc.constant('n'.repeat(5000))),
            })
            .map((value) => JSON.stringify(value)),
        ),
      }),
      ({ key, route, query, id, body }) => {
        const headers: [string, string][] = [['X-API-Key', key]];
        if (route === 'list') return { method: 'GET', path: `/v1/admin/jobs${query}`, headers };
        if (route === 'redrive') return { method: 'POST', path: '/v1/admin/dlq/redrive', headers };
        if (route === 'metrics') return { method: 'GET', path: `/v1/admin/metrics${query}`, headers };
        if (route === 'dashboard-events')
          return { method: 'GET', path: `/dashboard/api/jobs/${id}/events${query}`, headers };
        return {
          method: 'POST',
          path: `/v1/admin/jobs/${id}/resolve`,
          headers: [...headers, ['Content-Type', 'application/json']],
          body: Buffer.from(body, 'utf8'),
        };
      },
      {
        numRuns: 120,
        perRun: true,
        expect: ({ key, route }, res) => {
          if (key !== ADMIN_KEY) expect([401, 403, 404]).toContain(res.status);
          if (route === 'resolve' && res.status < 300)
            throw new Error('no fixture job is in review, so no resolution can succeed');
        },
      },
    );
  });

  it('tenant routes refuse tenant keys, junk names and invalid settings, and change nothing', async () => {
    await fuzz(
      'tenant routes',
      fc.record({
        key: fc.oneof(fc.constantFrom(ADMIN_KEY, ADMIN_KEY, ADMIN_KEY, KEY), apiKeyJunk),
        method: fc.constantFrom('GET', 'PUT'),
        name: fc.oneof(
          fc.constantFrom(
            'acme',
            'globex',
            'nobody',
            'admin',
            'Acme',
            'acme.',
            '-acme',
            `t${'x'.repeat(64)}`,
          ),
          junkId,
        ),
        body: invalidTenantSettings,
      }),
      ({ key, method, name, body }) => ({
        method,
        path: `/v1/admin/tenants/${name}`,
        headers: [
          ['X-API-Key', key],
          ...(method === 'PUT' ? [['Content-Type', 'application/json'] as const] : []),
        ],
        ...(method === 'PUT' ? { body: Buffer.from(body, 'utf8') } : {}),
      }),
      {
        numRuns: 120,
        perRun: true,
        expect: ({ key, method, name }, res) => {
          if (key !== ADMIN_KEY) expect([401, 403, 404]).toContain(res.status);
          else if (method === 'GET' && ['acme', 'globex'].includes(name)) expect(res.status).toBe(200);
          else expect([400, 404]).toContain(res.status);
        },
      },
    );
  });

  it('every route survives junk, repeated and oversized headers', async () => {
    const routeTargets: readonly (readonly [string, string])[] = [
      ['GET', '/healthz'],
      ['GET', '/openapi.json'],
      ['GET', '/v1/jobs'],
      ['GET', '/v1/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa'],
      ['GET', '/v1/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/events'],
      ['POST', '/v1/jobs'],
      ['POST', '/v1/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/cancel'],
      ['POST', '/v1/uploads'],
      ['GET', '/v1/admin/jobs'],
      ['POST', '/v1/admin/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/resolve'],
      ['POST', '/v1/provider/events'],
      ['GET', '/v1/admin/metrics'],
      ['GET', '/v1/admin/tenants/acme'],
      ['PUT', '/v1/admin/tenants/acme'],
      ['GET', '/dashboard'],
      ['GET', '/dashboard/api/jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/events'],
    ] as const;
    const headerName = fc.constantFrom(
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
    await fuzz(
      'headers',
      fc.record({
        target: fc.constantFrom(...routeTargets),
        headers: fc.array(
          fc.tuple(
            headerName,
            fc.oneof(
              headerValue,
              apiKeyJunk.map((s) => s.replace(/[^\t\x20-\x7e]/g, '')),
              fc.constantFrom(KEY, ADMIN_KEY),
            ),
          ),
          { maxLength: 8 },
        ),
        body: fc.option(
          fc.oneof(
            randomBytes,
            invalidJobBody.map((text) => Buffer.from(text)),
          ),
          { nil: undefined },
        ),
      }),
      ({ target: [method, path], headers, body }) => ({
        method,
        path,
        // A Host header Node cannot route would only test Node; the gateway sees the one it got.
        headers: headers.filter(([name, value]) => !(name === 'Host' && value === '') && name !== 'Expect'),
        body,
      }),
      {
        numRuns: 150,
        perRun: true,
        expect: ({ target: [method, path] }, res) => {
          // Only the open routes, or a fixture-free GET, can succeed with fuzzed headers.
          if (res.status < 300)
            expect([
              'GET /healthz',
              'GET /openapi.json',
              'GET /v1/jobs',
              'GET /v1/admin/jobs',
              'GET /v1/admin/metrics',
              'GET /v1/admin/tenants/acme',
              'GET /dashboard',
            ]).toContain(`${method} ${path}`);
        },
      },
    );
  });

  it('unknown routes and methods get a problem, never a 5xx', async () => {
    await fuzz(
      'routes and methods',
      fc.record({
        method: fc.constantFrom(
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
        ),
        path: fc.oneof(
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
        ),
      }),
      ({ method, path }) => ({ method, path, headers: [auth()] }),
      { numRuns: 100, perRun: true },
    );
  });

  it('the provider webhook refuses every bad signature, and every bad body under a good one', async () => {
    const now = () => Math.floor(Date.now() / 1000);
    const jobIds = () =>
      fc.oneof(
        fc.constantFrom(
          fixture.succeeded,
          fixture.canceled,
          fixture.others,
          'job_aaaaaaaaaaaaaaaaaaaaaaaaaa',
        ),
        junkId,
        fc.constant(undefined),
      );
    const invalidEvent = fc.oneof(
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
    const signature = (body: string) =>
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
            .constantFrom(
              'dev-provider-webhook-secret',
              `${PROVIDER_SECRET}x`,
              '',
              PROVIDER_SECRET.toUpperCase(),
            )
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
    await fuzz(
      'provider webhook',
      fc
        .record({
          jobId: jobIds(),
          body: fc.oneof(
            { weight: 4, arbitrary: invalidEvent },
            { weight: 1, arbitrary: randomBytes.map((b) => b.toString('latin1')) },
          ),
        })
        .chain(({ jobId, body }) =>
          fc.record({
            jobId: fc.constant(jobId),
            body: fc.constant(body),
            signature: signature(body),
            duplicate: fc.boolean(),
          }),
        ),
      ({ jobId, body, signature: sig, duplicate }) => {
        const headers: [string, string][] = [['Content-Type', 'application/json']];
        if (sig.kind !== 'missing') headers.push(['Provider-Signature', sig.header]);
        // A second, wrong signature line: which one the server reads must not open a door.
        if (duplicate && sig.kind !== 'missing')
          headers.push(['Provider-Signature', signPayload('not-the-secret-at-all', body, now())]);
        return {
          method: 'POST',
          path: `/v1/provider/events${jobId === undefined ? '' : `?jobId=${jobId}`}`,
          headers,
          body: Buffer.from(body, 'utf8'),
        };
      },
      {
        numRuns: 150,
        perRun: true,
        expect: ({ signature: sig, duplicate }, res, code) => {
          if (sig.kind !== 'valid' || duplicate) expect([res.status, code]).toEqual([401, 'unauthorized']);
          else expect([400, 401, 413]).toContain(res.status);
        },
      },
    );
  });

  it('the provider webhook ignores signed events that match no submission: unknown jobs, finished jobs', async () => {
    const now = () => Math.floor(Date.now() / 1000);
    await fuzz(
      'provider webhook stray events',
      fc.record({
        // Random provider ids never match the fixture jobs' own generations, and the failed one never had any.
        jobId: fc.oneof(
          fc
            .stringMatching(/^[a-z2-7]{26}$/)
            .map((suffix) => `job_${suffix}`)
            .filter((id) => !Object.values(fixture).includes(id)),
          fc.constantFrom(fixture.succeeded, fixture.failed, fixture.canceled, fixture.others),
        ),
        event: fc.oneof(
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
        ),
      }),
      ({ jobId, event }) => {
        const body = JSON.stringify(event);
        return {
          method: 'POST',
          path: `/v1/provider/events?jobId=${jobId}`,
          headers: [
            ['Content-Type', 'application/json'],
            ['Provider-Signature', signPayload(PROVIDER_SECRET, body, now())],
          ],
          body: Buffer.from(body, 'utf8'),
        };
      },
      { numRuns: 60, perRun: true, expect: (_value, res) => expect(res.status).toBe(204) },
    );
  });

  it('refuses oversized bodies with 413 before parsing them, and empty ones with 400', async () => {
    const MiB = 1024 * 1024;
    const now = Math.floor(Date.now() / 1000);
    const cases: { name: string; req: RawRequest; status: number; code: string }[] = [
      {
        name: 'empty JSON body',
        req: {
          method: 'POST',
          path: '/v1/jobs',
          headers: [auth(), ['Idempotency-Key', validKey()], ['Content-Type', 'application/json']],
        },
        status: 400,
        code: 'validation-failed',
      },
      {
        name: 'JSON body of 1 MiB + 1',
        req: {
          method: 'POST',
          path: '/v1/jobs',
          headers: [auth(), ['Idempotency-Key', validKey()], ['Content-Type', 'application/json']],
          body: Buffer.from(`{"type":"image.generate","input":{"prompt":"${'p'.repeat(MiB + 1 - 46)}"}}`),
        },
        status: 413,
        code: 'payload-too-large',
      },
      {
        name: 'multipart body of 4.5 MiB + 1',
        req: {
          method: 'POST',
          path: '/v1/jobs',
          headers: [
            auth(),
            ['Idempotency-Key', validKey()],
            ['Content-Type', 'multipart/form-data; boundary=b'],
          ],
          body: Buffer.alloc(Math.floor(4.5 * MiB) + 1, 'x'),
        },
        status: 413,
        code: 'payload-too-large',
      },
      {
        name: 'body over the gateway’s 10 MiB',
        req: {
          method: 'POST',
          path: '/v1/jobs',
          headers: [auth(), ['Idempotency-Key', validKey()], ['Content-Type', 'application/json']],
          body: Buffer.alloc(10 * MiB + 1024, ' '),
        },
        status: 413,
        code: 'payload-too-large',
      },
      {
        name: 'provider event over 1 MiB with a valid signature',
        req: (() => {
          const body = JSON.stringify({
            type: 'progress',
            id: 'x',
            progress: 1,
            at: 'x',
            pad: 'p'.repeat(MiB),
          });
          return {
            method: 'POST',
            path: `/v1/provider/events?jobId=${fixture.succeeded}`,
            headers: [
              ['Content-Type', 'application/json'],
              ['Provider-Signature', signPayload(PROVIDER_SECRET, body, now)],
            ],
            body: Buffer.from(body),
          };
        })(),
        status: 413,
        code: 'payload-too-large',
      },
      {
        name: 'upload request of 11 MiB',
        req: {
          method: 'POST',
          path: '/v1/uploads',
          headers: [auth(), ['Content-Type', 'application/json']],
          body: Buffer.alloc(11 * MiB, '['),
        },
        status: 413,
        code: 'payload-too-large',
      },
    ];
    const before = await footprint(stack);
    for (const { name, req, status, code } of cases) {
      const res = await api(req);
      const answer = checkAnswer(req, res);
      expect({ name, status: res.status, code: answer.code }).toEqual({ name, status, code });
    }
    expect(footprintChanges(before, await footprint(stack))).toEqual([]);
  });

  it('the WebSocket handshake refuses junk without a 5xx and subscribes nobody', async () => {
    const seed = seedOf('WebSocket connect');
    const numRuns = Math.max(1, Math.round(60 * RUN_SCALE));
    process.stdout.write(`fuzz WebSocket connect: seed ${seed}, ${numRuns} runs\n`);
    const before = await footprint(stack);
    const streamUrl = stack.endpoints.streamUrl;
    await check(
      fc.asyncProperty(
        fc.record({
          query: fc.oneof(
            queryString(
              ['jobId', 'apiKey'],
              fc.oneof(queryValue, junkId, fc.constantFrom(KEY, fixture.others)),
            ),
            fc.constantFrom(
              `?jobId=${fixture.succeeded}`,
              `?apiKey=${KEY}`,
              `?jobId=${fixture.others}&apiKey=${KEY}`,
              `?jobId=${fixture.succeeded}&apiKey=${OTHER_KEY}`,
              `?jobId=${fixture.succeeded}&apiKey=${KEY}`,
              `?apiKey=${KEY}&jobId=${fixture.succeeded}&jobId=${fixture.others}`,
              `?jobId=${fixture.succeeded}&apiKey=${ADMIN_KEY}`,
              `?jobId=${fixture.succeeded}&apiKey=${KEY}%20`,
              `?jobId=${fixture.succeeded}%00&apiKey=${KEY}`,
              `?jobId=${fixture.succeeded.toUpperCase()}&apiKey=${KEY}`,
              `?jobId=${fixture.succeeded}&apiKey=${'k'.repeat(600)}`,
              `?jobId=job_aaaaaaaaaaaaaaaaaaaaaaaaaa&apiKey=${KEY}`,
            ),
          ),
          protocol: fc.option(fc.constantFrom('chat', 'longhaul.v1', 'x'.repeat(300)), { nil: undefined }),
          origin: fc.option(headerValue, { nil: undefined }),
        }),
        async ({ query, protocol, origin }) =>
          attempt(
            () => `WebSocket handshake ${streamUrl}${query}`,
            async () => {
              const outcome = await new Promise<{ status: number; body: string }>((resolve, reject) => {
                const socket = new WebSocket(`${streamUrl}${query}`, protocol ? [protocol] : undefined, {
                  handshakeTimeout: 10_000,
                  ...(origin !== undefined ? { origin } : {}),
                });
                socket.once('open', () => {
                  socket.terminate();
                  resolve({ status: 101, body: '' });
                });
                socket.once('unexpected-response', (_request, response) => {
                  const chunks: Buffer[] = [];
                  response.on('data', (chunk: Buffer) => chunks.push(chunk));
                  response.on('end', () =>
                    resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
                  );
                });
                socket.once('error', (error) => {
                  // ws refuses some inputs itself (an invalid subprotocol) before anything is sent.
                  if (/subprotocol|Invalid URL/i.test(error.message)) resolve({ status: 0, body: '' });
                  else reject(error);
                });
              });
              const context = `\nquery: ${query}\nanswer ${outcome.status}: ${outcome.body.slice(0, 500)}`;
              if (outcome.status >= 500) throw new Error(`handshake answered ${outcome.status}${context}`);
              for (const leak of LEAKS) {
                const found = leak.exec(outcome.body)?.[0];
                if (found && !query.includes(found)) throw new Error(`internal detail ${found}${context}`);
              }
              // Only the key of the job's own tenant opens it.
              // Only the job's own tenant, or the admin, watches a job; repeated parameters count by their last value.
              if (outcome.status === 101) {
                const params = new URLSearchParams(query);
                expect(params.getAll('jobId').at(-1)).toBe(fixture.succeeded);
                expect([KEY, ADMIN_KEY]).toContain(params.getAll('apiKey').at(-1));
              }
            },
          ),
      ),
      { seed, numRuns },
    );
    // Opened connections unsubscribe on close; what is left must be what was there.
    await pollUntil(async () => footprintChanges(before, await footprint(stack)).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 200,
      description: 'no subscription left behind',
    });
  });
});
