import { createHash } from 'node:crypto';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { PROBLEM_CONTENT_TYPE, type ProblemCode, problems, problemType } from '../../../config/problems';
import {
  documentClient,
  queueDepth,
  type RunningLocalStack,
  s3Client,
  sqsClient,
} from '../../../local/harness/local-stack';
import { describeRequest, type RawRequest, type RawResponse } from './raw-http';

/**
 * What holds of every answer, whatever was asked: never a 5xx, never a stack
 * trace or an internal path, every 4xx an RFC 9457 problem whose code belongs
 * to its status; and of every request the API refuses: it changes nothing
 * (the footprint before and after is the same, item for item).
 */

/** The status a problem code is answered with, from the one problem table; undefined for a code it lacks. */
const statusOf = (code: string): number | undefined =>
  Object.hasOwn(problems, code) ? problems[code as ProblemCode].status : undefined;

/** The status and code of an answer that is the problem `code`, its status from the table: `[401, 'unauthorized']`. */
export const problemAnswer = (code: ProblemCode): [number, ProblemCode] => [problems[code].status, code];

/** What must never reach a client: stack frames, source locations, paths on the server, runtime error names. */
export const LEAKS: readonly RegExp[] = [
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

/** The first internal detail in `text`; an echo of the client's own bytes (`asked`) is no leak. */
export function leakIn(text: string, asked: string): string | undefined {
  for (const leak of LEAKS) {
    const found = leak.exec(text)?.[0];
    if (found && !asked.includes(found)) return found;
  }
  return undefined;
}

/** The properties every answer has, whatever was asked. Returns the parsed problem of a 4xx. */
export function checkAnswer(req: RawRequest, res: RawResponse): { code?: string } {
  const text = res.body.toString('utf8');
  const context = () =>
    `\n--- request ---\n${describeRequest(req)}\n--- answer ${res.status} ---\n${text.slice(0, 2000)}`;
  if (res.status >= 500 || res.status < 100) throw new Error(`server error ${res.status}${context()}`);
  const asked = `${req.path}\n${req.headers.map(([n, v]) => `${n}: ${v}`).join('\n')}\n${
    req.body?.toString('latin1') ?? ''
  }\n${req.body?.toString('utf8') ?? ''}`;
  const leaked = leakIn(text, asked);
  if (leaked) throw new Error(`internal detail ${JSON.stringify(leaked)}${context()}`);
  if (res.status < 400) return {};
  const contentType = res.headers['content-type'] ?? '';
  if (!contentType.startsWith(PROBLEM_CONTENT_TYPE))
    throw new Error(`a ${res.status} that is not ${PROBLEM_CONTENT_TYPE} (${contentType})${context()}`);
  if (req.method === 'HEAD') return {};
  let problem: { type?: unknown; title?: unknown; status?: unknown; detail?: unknown; code?: unknown };
  try {
    problem = JSON.parse(text);
  } catch {
    throw new Error(`a problem body that is not JSON${context()}`);
  }
  const code = String(problem.code);
  if (statusOf(code) !== res.status)
    throw new Error(
      `code ${JSON.stringify(problem.code)} does not belong to status ${res.status}${context()}`,
    );
  if (problem.status !== res.status || problem.type !== problemType(code as ProblemCode))
    throw new Error(`problem status or type do not match the answer${context()}`);
  if (typeof problem.title !== 'string' || typeof problem.detail !== 'string')
    throw new Error(`problem without title or detail${context()}`);
  if (res.status === 429 && !res.headers['retry-after'])
    throw new Error(`429 without Retry-After${context()}`);
  return { code };
}

// ---------------------------------------------------------------------------------------------
// The footprint: everything a request could change, to compare before and after.

export interface Footprint {
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

/** The item listing the tenants the reconciler recounts (`backlogRegistryKey`). */
const isBacklogRegistry = (item: Record<string, unknown>) => item.pk === 'BACKLOGS' && item.sk === 'TENANTS';

export async function footprint(stack: RunningLocalStack): Promise<Footprint> {
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
    // A job's kept step events are what its execution's history said when a timeline read it: a read keeps them.
    if (String(item.sk).startsWith('STEPS#')) continue;
    // A tenant's backlog counter and its recount mark are the reconciler's, which recounts in the
    // background between any two snapshots, and so is the list of tenants to recount, which a recount
    // finding none takes a tenant off; a request that admitted a job shows as that job's item.
    const { backlog: _backlog, backlogCheck: _backlogCheck, ...counted } = item;
    const own = isBacklogRegistry(item) ? { ...counted, tenants: undefined } : counted;
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

export function footprintChanges(before: Footprint, after: Footprint): string[] {
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
