import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SQSClient } from '@aws-sdk/client-sqs';
import { MessageMoveTasks, SqsServiceError } from './sqs-message-moves';

/**
 * SQS and S3, emulated by fauxqs (visibility timeouts, long polling, redrive
 * to a DLQ, path-style S3), persisted to SQLite under `dataDir`: SQS is
 * durable in AWS, so messages and objects survive a restart here too. The
 * message move tasks that redrive a DLQ, which fauxqs lacks, are added on
 * the same endpoint (./sqs-message-moves.ts).
 *
 * fauxqs' `startFauxqs` always listens on 0.0.0.0, which would expose the
 * emulator's unauthenticated queues and objects to the network. Its public
 * `buildApp` can listen anywhere but leaves persistence to the caller, so the
 * store and persistence classes are loaded from the package's files (fauxqs is
 * pinned to an exact version) and wired the way `startFauxqs` wires them.
 */
export interface SqsS3Emulator {
  readonly endpoint: string;
  stop(): Promise<void>;
}

interface Persistence {
  /** Its SQLite database (node:sqlite), in WAL mode. */
  readonly db?: { exec(sql: string): void };
  load(sqsStore: unknown, snsStore: unknown, s3Store: unknown): void;
  close(): void;
}

interface Store {
  persistence?: Persistence;
}

interface SqsStore extends Store {
  host: string;
  allQueues(): Iterable<Store>;
  /** Queues by URL. */
  queues?: Map<string, { url: string }>;
}

interface Internals {
  readonly SqsStore: new () => SqsStore;
  readonly SnsStore: new () => Store;
  readonly S3Store: new () => Store;
  readonly PersistenceManager: new (dataDir: string) => Persistence;
}

function packageDir(name: string): string {
  const dir = (require.resolve.paths(name) ?? [])
    .map((nodeModules) => join(nodeModules, name))
    .find((candidate) => existsSync(join(candidate, 'package.json')));
  if (!dir) throw new Error(`cannot find the ${name} package; run npm install`);
  return dir;
}

async function loadInternals(): Promise<Internals> {
  const dist = join(packageDir('fauxqs'), 'dist');
  const load = async (file: string, exportName: string): Promise<unknown> => {
    const module = (await import(pathToFileURL(join(dist, file)).href)) as Record<string, unknown>;
    const value = module[exportName];
    if (typeof value !== 'function') {
      throw new Error(
        `fauxqs no longer exports ${exportName} from dist/${file}; update local/emulators/sqs-s3.ts`,
      );
    }
    return value;
  };
  const [SqsStore, SnsStore, S3Store, PersistenceManager] = await Promise.all([
    load('sqs/sqsStore.js', 'SqsStore'),
    load('sns/snsStore.js', 'SnsStore'),
    load('s3/s3Store.js', 'S3Store'),
    load('persistence.js', 'PersistenceManager'),
  ]);
  return { SqsStore, SnsStore, S3Store, PersistenceManager } as Internals;
}

const SQS_TARGET_PREFIX = 'AmazonSQS.';
const AWS_JSON_CONTENT_TYPE = 'application/x-amz-json-1.0';

export async function startSqsS3Emulator(options: {
  readonly host: string;
  /** The region in the queues' ARNs; the move tasks sign their calls for it. */
  readonly region: string;
  /** SQLite directory; a restart on the same directory resumes queues, messages, buckets and objects. */
  readonly dataDir: string;
}): Promise<SqsS3Emulator> {
  const { buildApp } = await import('fauxqs');
  const internals = await loadInternals();
  const sqsStore = new internals.SqsStore();
  const snsStore = new internals.SnsStore();
  const s3Store = new internals.S3Store();
  // Queue URLs then carry the host the client called (127.0.0.1:<port>) instead of
  // sqs.<region>.localhost, which Node does not resolve; the SQS client sends each
  // call to its QueueUrl's host unless given an explicit endpoint.
  sqsStore.host = '';

  const persistence = new internals.PersistenceManager(options.dataDir);
  try {
    // Every message is its own transaction, and by default (FULL) each commit waits for an fsync
    // on the stack's one event loop: 2.3 s for the 1,000 messages of a full batch here, stalling
    // every handler meanwhile, where real SQS costs the caller nothing of the kind. NORMAL in WAL
    // mode still keeps every committed message through a killed process (what restarts and the
    // chaos suite do); only a crash of the machine itself may lose the last ones.
    if (!persistence.db)
      throw new Error('fauxqs persistence no longer has its db; update local/emulators/sqs-s3.ts');
    persistence.db.exec('PRAGMA synchronous = NORMAL');
    // Load before attaching, as startFauxqs does, so restoring does not write everything back.
    persistence.load(sqsStore, snsStore, s3Store);
  } catch (error) {
    persistence.close();
    throw error;
  }
  sqsStore.persistence = persistence;
  snsStore.persistence = persistence;
  s3Store.persistence = persistence;
  for (const queue of sqsStore.allQueues()) queue.persistence = persistence;

  const app = buildApp({ logger: false, stores: { sqsStore, snsStore, s3Store } as never });
  app.addHook('preClose', () => persistence.close());

  // The message move tasks fauxqs lacks, answered before its router sees them; the tasks
  // move messages through this emulator's own API, reached once it listens.
  let selfClient: SQSClient | undefined;
  const moves = new MessageMoveTasks(() => {
    if (!selfClient) throw new Error('the SQS emulator is not listening yet');
    return selfClient;
  });
  // The buckets are private, as Longhaul's are in AWS: a request neither signed (an SDK call's
  // Authorization header) nor presigned is refused, and so is a presigned URL past its expiry.
  app.addHook('onRequest', async (request, reply) => {
    const refusal = refusalOf(
      request.headers.authorization,
      new URL(request.url, 'http://local').searchParams,
    );
    if (!refusal) return;
    await reply
      .status(403)
      .header('content-type', 'application/xml')
      .send(
        `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>${refusal}</Message></Error>`,
      );
    return reply;
  });
  app.addHook('preHandler', async (request, reply) => {
    const target = request.headers['x-amz-target'];
    if (request.method !== 'POST' || typeof target !== 'string' || !target.startsWith(SQS_TARGET_PREFIX))
      return;
    const operation = moves.operations[target.slice(SQS_TARGET_PREFIX.length)];
    if (!operation) return;
    const body = request.body;
    const input =
      body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
    reply.header('content-type', AWS_JSON_CONTENT_TYPE);
    try {
      await reply.status(200).send(JSON.stringify(await operation(input)));
    } catch (error) {
      if (!(error instanceof SqsServiceError)) throw error;
      await reply
        .status(400)
        // What the query-compatible SDK reads the error code from.
        .header('x-amzn-query-error', `${error.code};Sender`)
        .send(JSON.stringify({ __type: `com.amazonaws.sqs#${error.code}`, message: error.message }));
    }
    return reply;
  });

  const traces = new TraceHeaders();
  app.addHook('onSend', async (request, reply, payload) => {
    const target = request.headers['x-amz-target'];
    if (typeof target !== 'string' || typeof payload !== 'string' || reply.statusCode !== 200) return payload;
    return traces.onAnswer(target.slice(SQS_TARGET_PREFIX.length), request.headers, request.body, payload);
  });

  let endpoint: string;
  try {
    endpoint = await app.listen({ host: options.host, port: 0 });
  } catch (error) {
    await app.close();
    throw error;
  }
  rebaseRestoredQueueUrls(sqsStore, endpoint);
  selfClient = new SQSClient({
    region: options.region,
    endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  let stopped: Promise<void> | undefined;
  return {
    endpoint,
    stop() {
      stopped ??= (async () => {
        await moves.stop();
        selfClient?.destroy();
        await app.close();
      })();
      return stopped;
    },
  };
}

/**
 * A restored queue keeps the URL it was created with, port included, and
 * GetQueueUrl, ListQueues and an idempotent CreateQueue answer with it; the
 * SQS client would then call the previous run's port. Point them at this run's.
 */
function rebaseRestoredQueueUrls(sqsStore: SqsStore, endpoint: string): void {
  const queues = sqsStore.queues;
  if (!(queues instanceof Map)) return;
  for (const [url, queue] of [...queues]) {
    const rebased = new URL(new URL(url).pathname, endpoint).toString();
    if (rebased === url) continue;
    queues.delete(url);
    queue.url = rebased;
    queues.set(rebased, queue);
  }
}

type Json = Record<string, unknown>;
const asObject = (value: unknown): Json =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};

/**
 * SQS's `AWSTraceHeader` system attribute, which fauxqs lacks: the
 * `X-Amzn-Trace-Id` a message was sent with (or its explicit
 * `MessageSystemAttributes.AWSTraceHeader`), handed back on receive. Lambda's
 * recursive loop detection reads the chain's count from it (local/event-source.ts).
 * Kept in memory for the most recent messages: after a restart a chain starts over.
 */
class TraceHeaders {
  private static readonly KEPT = 100_000;
  private readonly byMessageId = new Map<string, string>();

  onAnswer(
    operation: string,
    headers: Record<string, unknown>,
    requestBody: unknown,
    payload: string,
  ): string {
    const body = asObject(requestBody);
    if (operation === 'SendMessage' || operation === 'SendMessageBatch') {
      const header = typeof headers['x-amzn-trace-id'] === 'string' ? headers['x-amzn-trace-id'] : undefined;
      const answer = asObject(JSON.parse(payload));
      if (operation === 'SendMessage') {
        this.remember(answer.MessageId, TraceHeaders.explicit(body) ?? header);
      } else {
        const entries = new Map(
          (Array.isArray(body.Entries) ? body.Entries : []).map((entry) => [
            asObject(entry).Id,
            asObject(entry),
          ]),
        );
        for (const sent of Array.isArray(answer.Successful) ? answer.Successful : []) {
          const { Id, MessageId } = asObject(sent);
          this.remember(MessageId, TraceHeaders.explicit(entries.get(Id) ?? {}) ?? header);
        }
      }
      return payload;
    }
    if (operation !== 'ReceiveMessage') return payload;
    const names = [body.AttributeNames, body.MessageSystemAttributeNames].flatMap((list) =>
      Array.isArray(list) ? list : [],
    );
    if (!names.includes('All') && !names.includes('AWSTraceHeader')) return payload;
    const answer = asObject(JSON.parse(payload));
    if (!Array.isArray(answer.Messages)) return payload;
    for (const message of answer.Messages as Json[]) {
      const trace = this.byMessageId.get(String(message.MessageId));
      if (trace !== undefined)
        message.Attributes = { ...asObject(message.Attributes), AWSTraceHeader: trace };
    }
    return JSON.stringify(answer);
  }

  private static explicit(entry: Json): string | undefined {
    const value = asObject(asObject(entry.MessageSystemAttributes).AWSTraceHeader).StringValue;
    return typeof value === 'string' ? value : undefined;
  }

  private remember(messageId: unknown, trace: string | undefined): void {
    if (typeof messageId !== 'string' || trace === undefined) return;
    this.byMessageId.set(messageId, trace);
    if (this.byMessageId.size > TraceHeaders.KEPT) {
      const oldest = this.byMessageId.keys().next().value;
      if (oldest !== undefined) this.byMessageId.delete(oldest);
    }
  }
}

/** Why S3 would refuse a request to a private bucket: unsigned, or presigned and expired; undefined if it would not. */
export function refusalOf(
  authorization: string | undefined,
  query: URLSearchParams,
  now: Date = new Date(),
): string | undefined {
  if (authorization) return undefined;
  if (!query.has('X-Amz-Signature')) return 'Access Denied';
  const signedAt = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(query.get('X-Amz-Date') ?? '');
  const expires = Number(query.get('X-Amz-Expires'));
  if (!signedAt || !Number.isFinite(expires)) return 'Access Denied';
  const [, y, mo, d, h, mi, se] = signedAt;
  const start = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(se));
  return now.getTime() > start + expires * 1000 ? 'Request has expired' : undefined;
}
