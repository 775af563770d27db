import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ProviderName } from '../../config/providers';
import { DynamoDbJobStore, toItem } from '../../lambdas/adapters/dynamodb-job-store';
import { DynamoDbSlotPool } from '../../lambdas/adapters/dynamodb-slot-pool';
import { DynamoDbWaitingLines } from '../../lambdas/adapters/dynamodb-waiting-lines';
import { fillFreeSlot } from '../../lambdas/domain/dispatch';
import { waitingEntryOf } from '../../lambdas/domain/fair-share';
import { type Job, slotHolderOf } from '../../lambdas/domain/job';
import type { JobQueue } from '../../lambdas/domain/ports';
import { TENANT_DEFAULTS } from '../../lambdas/domain/tenants';
import { startDynaliteTables } from '../../local/harness/dynalite-tables';
import { fmt, median, print, round } from '../support/common';
import { benchJob } from '../support/jobs';

/**
 * What one fair-share choice costs as the waiting grows: DynamoDB requests
 * and items read per choice (`fillFreeSlot` through the real adapters on
 * dynalite), with many tenants waiting a few jobs each and with few tenants
 * waiting many. The choice reads the pool, the set of waiting tenants (one
 * item each) and the head of one line: the figures should grow with tenants
 * waiting and not at all with jobs waiting.
 */

export interface ChoiceFigures {
  readonly runs: ReadonlyArray<{
    tenants: number;
    jobsPerTenant: number;
    choices: number;
    requestsPerChoice: number;
    itemsReadPerChoice: number;
    msPerChoice: number;
  }>;
}

const PROVIDER: ProviderName = 'longhaul-http';
const LIMIT = 5;
const CHOICES = 30;
const SHAPES = [
  { tenants: 2, jobsPerTenant: 2_000 },
  { tenants: 50, jobsPerTenant: 100 },
  { tenants: 500, jobsPerTenant: 4 },
] as const;

/** A document client that counts the requests it sends and the items they read. */
function counting(client: DynamoDBDocumentClient) {
  const counts = { requests: 0, itemsRead: 0 };
  const wrapped = {
    send: async (command: never) => {
      counts.requests++;
      const output = (await client.send(command)) as { Item?: unknown; Items?: unknown[]; Count?: number };
      counts.itemsRead += output.Items?.length ?? (output.Item ? 1 : 0);
      return output;
    },
  } as unknown as DynamoDBDocumentClient;
  return { client: wrapped, counts };
}

export async function choiceSection(): Promise<ChoiceFigures> {
  print(
    `\n## 10. Cost of a fair-share choice: ${SHAPES.map((s) => `${s.tenants} tenants x ${s.jobsPerTenant} jobs`).join(', ')} waiting`,
  );
  const runs: ChoiceFigures['runs'][number][] = [];
  for (const shape of SHAPES) runs.push(await measureShape(shape.tenants, shape.jobsPerTenant));
  return { runs };
}

async function measureShape(tenants: number, jobsPerTenant: number): Promise<ChoiceFigures['runs'][number]> {
  const db = await startDynaliteTables();
  try {
    const table = db.jobTableName;
    const at = new Date();
    const jobs: Job[] = [];
    for (let t = 0; t < tenants; t++) {
      for (let j = 0; j < jobsPerTenant; j++) {
        const created = new Date(at.getTime() - (jobsPerTenant - j) * 1000);
        jobs.push({ ...benchJob(`choice-${t}-${j}`, 'queued', created), tenantId: `tenant-${t}` });
      }
    }
    // The jobs and their lines' entries and markers, loaded directly as intake would leave them.
    const lines = new DynamoDbWaitingLines(db.documents, table);
    for (let i = 0; i < jobs.length; i += 25) {
      await writeAll(db.documents, table, jobs.slice(i, i + 25));
    }
    for (let i = 0; i < jobs.length; i += 50) {
      await Promise.all(jobs.slice(i, i + 50).map((job) => lines.add(waitingEntryOf(job))));
    }

    const { client, counts } = counting(db.documents);
    const pool = new DynamoDbSlotPool(client, table, PROVIDER);
    const startsItself = async (): Promise<never> => {
      throw new Error('a choice here starts its job itself');
    };
    const noQueue: JobQueue = { enqueue: startsItself, enqueueMany: startsItself };
    const deps = {
      store: new DynamoDbJobStore(client, { tableName: table, retentionDays: 30 }),
      slots: () => pool,
      queue: noQueue,
      waiting: new DynamoDbWaitingLines(client, table),
      tenantShares: async (names: readonly string[]) =>
        new Map(names.map((name) => [name, { weight: TENANT_DEFAULTS.weight }])),
      maxInFlight: { 'longhaul-http': LIMIT, replicate: LIMIT, deepgram: LIMIT, bedrock: LIMIT },
      now: () => new Date(),
      start: async () => {},
    };
    const perChoice: { requests: number; itemsRead: number; ms: number }[] = [];
    for (let i = 0; i < CHOICES; i++) {
      const before = { ...counts };
      const started = performance.now();
      const chosen = await fillFreeSlot(deps, PROVIDER);
      const ms = performance.now() - started;
      if (!chosen) throw new Error(`choice ${i + 1} found no job among ${jobs.length} waiting`);
      perChoice.push({
        requests: counts.requests - before.requests,
        itemsRead: counts.itemsRead - before.itemsRead,
        ms,
      });
      // The chosen job's run ends at once, so every choice finds a free slot.
      const job = jobs.find((candidate) => candidate.id === chosen) as Job;
      await new DynamoDbSlotPool(db.documents, table, PROVIDER).release(slotHolderOf(job), job.tenantId);
    }
    const run = {
      tenants,
      jobsPerTenant,
      choices: CHOICES,
      requestsPerChoice: median(perChoice.map((c) => c.requests)),
      itemsReadPerChoice: median(perChoice.map((c) => c.itemsRead)),
      msPerChoice: round(median(perChoice.map((c) => c.ms)), 1),
    };
    print(
      `measured: ${tenants} tenants x ${jobsPerTenant} jobs waiting -> ${run.requestsPerChoice} requests, ` +
        `${run.itemsReadPerChoice} items read, ${fmt(run.msPerChoice, 1)} ms per choice (median of ${CHOICES})`,
    );
    return run;
  } finally {
    await db.stop();
  }
}

async function writeAll(
  documents: DynamoDBDocumentClient,
  table: string,
  jobs: readonly Job[],
): Promise<void> {
  let request: Record<string, { PutRequest: { Item: Record<string, unknown> } }[]> | undefined = {
    [table]: jobs.map((job) => ({ PutRequest: { Item: { ...toItem(job, 30) } } })),
  };
  while (request && Object.keys(request).length > 0) {
    const { UnprocessedItems } = await documents.send(new BatchWriteCommand({ RequestItems: request }));
    request = UnprocessedItems as typeof request;
  }
}
