import { BedrockRuntimeClient, InvokeModelCommand } from '@aws-sdk/client-bedrock-runtime';
import { type Job, Queue, Worker } from 'bullmq';
import * as z from 'zod';
import { EMBEDDING_MODELS } from '../../config/embedding-models';
import { watchChild } from '../../local/harness/child-process';
import { pollUntil } from '../../local/harness/local-stack';
import { spawnPeerScript } from './peer-process';

/**
 * The peer of Longhaul's embedding runs: a BullMQ Worker whose concurrency is
 * the embedding provider's limit, one job per run of passages, each embedded
 * with Titan Text Embeddings V2 through `InvokeModel` of the AWS SDK's Bedrock
 * runtime client, one passage a call and the calls one after another, as
 * Longhaul's Bedrock adapter makes them. No retries (a resent call is a second
 * charge), nothing stored but BullMQ's own job record: the least a team would
 * build to embed passages at a limit.
 *
 * `startEmbeddingPeer` runs this file as a process of its own, as the bench
 * runs Longhaul's stack, and adds the runs from the bench's process.
 * Environment of the process: REDIS_PORT, PEER_LIMIT, BEDROCK_URL (the
 * simulator's `/bedrock`), EMBEDDING_DIMENSIONS.
 */

const HOST = '127.0.0.1';
const QUEUE_NAME = 'embeddings';
const READY_LINE = 'embedding peer: ready';
const MODEL = EMBEDDING_MODELS['titan-text-v2'];
const OUTPUT_LIMIT = 64 * 1024;

/** One run: the passages' texts, in order. */
interface EmbeddingRun {
  readonly texts: readonly string[];
}

interface Embedded {
  readonly count: number;
  readonly inputTokens: number;
}

const titanAnswer = z.object({
  embedding: z.array(z.number()).min(1),
  inputTextTokenCount: z.number().int().min(0),
});

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

async function serve(): Promise<void> {
  const connection = { host: HOST, port: Number(env('REDIS_PORT')) };
  const limit = Number(env('PEER_LIMIT'));
  const dimensions = Number(env('EMBEDDING_DIMENSIONS'));
  const client = new BedrockRuntimeClient({
    endpoint: env('BEDROCK_URL'),
    region: 'us-east-1',
    credentials: { accessKeyId: 'peer', secretAccessKey: 'peer' },
    maxAttempts: 1,
  });
  const embed = async (job: Job<EmbeddingRun, Embedded>): Promise<Embedded> => {
    let inputTokens = 0;
    for (const text of job.data.texts) {
      const answer = await client.send(
        new InvokeModelCommand({
          modelId: MODEL.modelId,
          contentType: 'application/json',
          accept: 'application/json',
          body: JSON.stringify({ inputText: text, dimensions, normalize: true }),
        }),
      );
      const parsed = titanAnswer.parse(JSON.parse(new TextDecoder().decode(answer.body)));
      if (parsed.embedding.length !== dimensions) {
        throw new Error(`bedrock answered ${parsed.embedding.length} dimensions, not ${dimensions}`);
      }
      inputTokens += parsed.inputTextTokenCount;
    }
    return { count: job.data.texts.length, inputTokens };
  };
  // Workers need maxRetriesPerRequest: null so their blocking commands survive a Redis reconnect.
  const worker = new Worker<EmbeddingRun, Embedded>(QUEUE_NAME, embed, {
    connection: { ...connection, maxRetriesPerRequest: null },
    concurrency: limit,
  });
  await worker.waitUntilReady();
  process.stdout.write(`${READY_LINE}\n`);
  const stop = async () => {
    await worker.close();
    client.destroy();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

export interface EmbeddingPeerOptions {
  readonly redisPort: number;
  readonly limit: number;
  readonly bedrockUrl: string;
  readonly dimensions: number;
}

export interface EmbeddingPeer {
  /** Adds one job per run with `Queue.addBulk` and waits until every one completed; answers how many failed. */
  embed(
    runs: readonly (readonly string[])[],
    timeoutMs: number,
  ): Promise<{ completed: number; failed: number }>;
  stop(): Promise<void>;
}

/** Starts the worker's process and a queue to add runs to, on the Redis at `redisPort`. */
export async function startEmbeddingPeer(options: EmbeddingPeerOptions): Promise<EmbeddingPeer> {
  const child = spawnPeerScript('bench/peer/embedding-worker.ts', options, {
    BEDROCK_URL: options.bedrockUrl,
    EMBEDDING_DIMENSIONS: String(options.dimensions),
  });
  const watched = watchChild(child, { outputLimit: OUTPUT_LIMIT, detached: true });
  const stopProcess = () => watched.stop(10_000);
  try {
    await Promise.race([
      pollUntil(() => watched.output().includes(READY_LINE), {
        timeoutMs: 60_000,
        intervalMs: 50,
        description: 'the embedding peer to be ready',
      }),
      watched.exited.then(() => {
        throw new Error(`the embedding peer exited before it was ready:\n${watched.output().slice(-4000)}`);
      }),
    ]);
  } catch (error) {
    await stopProcess();
    throw error;
  }
  const queue = new Queue<EmbeddingRun, Embedded>(QUEUE_NAME, {
    connection: { host: HOST, port: options.redisPort },
  });
  let added = 0;
  return {
    async embed(runs, timeoutMs) {
      const before = await queue.getJobCounts('completed', 'failed');
      await queue.addBulk(
        runs.map((texts) => ({ name: 'embed', data: { texts }, opts: { jobId: `run-${++added}` } })),
      );
      return pollUntil(
        async () => {
          const counts = await queue.getJobCounts('completed', 'failed');
          const completed = (counts.completed ?? 0) - (before.completed ?? 0);
          const failed = (counts.failed ?? 0) - (before.failed ?? 0);
          return completed + failed >= runs.length ? { completed, failed } : undefined;
        },
        { timeoutMs, intervalMs: 100, description: `the peer to embed ${runs.length} runs` },
      );
    },
    async stop() {
      await queue.close();
      await stopProcess();
    },
  };
}

if (require.main === module) {
  serve().catch((error: unknown) => {
    process.stderr.write(`embedding peer failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}
