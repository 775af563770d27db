import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { ProviderName } from '../../config/providers';
import { DynamoDbJobStore, toItem } from '../../lambdas/adapters/dynamodb-job-store';
import { DynamoDbReconcilerProgress } from '../../lambdas/adapters/dynamodb-reconciler-progress';
import { DynamoDbSlotPool } from '../../lambdas/adapters/dynamodb-slot-pool';
import { DynamoDbTenantBacklogs } from '../../lambdas/adapters/dynamodb-tenant-backlog';
import { DynamoDbTimeline } from '../../lambdas/adapters/dynamodb-timeline';
import { DynamoDbWaitingLines } from '../../lambdas/adapters/dynamodb-waiting-lines';
import { SfnWorkflow } from '../../lambdas/adapters/sfn-workflow';
import { SqsJobQueue } from '../../lambdas/adapters/sqs-job-queue';
import type { Job } from '../../lambdas/domain/job';
import { reconcile } from '../../lambdas/domain/reconcile';
import { TENANT_DEFAULTS } from '../../lambdas/domain/tenants';
import { longhaulHttp } from '../../lambdas/providers/longhaul-http';
import { documentClient, sfnClient, sqsClient } from '../../local/harness/local-stack';
import { fmt, median, print, round } from '../support/common';
import { benchJob } from '../support/jobs';
import { startBenchStack } from '../support/stack';

/**
 * Reconciler cost: index items one pass reads with 20 active jobs, beside 100
 * and then 10,000 finished ones, through the real adapters on the emulators.
 */

export interface ReconcileFigures {
  readonly active: number;
  readonly runs: ReadonlyArray<{ finished: number; itemsRead: number; jobsChecked: number; passMs: number }>;
}

const ACTIVE = 20;

export async function reconcileSection(): Promise<ReconcileFigures> {
  print(`\n## 2. Reconciler items read per pass: ${ACTIVE} active jobs, 100 then 10,000 finished`);
  const s = await startBenchStack({ SIM_JOB_MS: '1000' });
  try {
    const e = s.stack.endpoints;
    const documents = documentClient(e);
    const table = e.jobTableName;
    const write = async (jobs: Job[]) => {
      for (let i = 0; i < jobs.length; i += 25) {
        let request: Record<string, { PutRequest: { Item: Record<string, unknown> } }[]> | undefined = {
          [table]: jobs.slice(i, i + 25).map((job) => ({ PutRequest: { Item: { ...toItem(job, 30) } } })),
        };
        while (request && Object.keys(request).length > 0) {
          const { UnprocessedItems } = await documents.send(new BatchWriteCommand({ RequestItems: request }));
          request = UnprocessedItems as typeof request;
        }
      }
    };
    const deps = {
      store: new DynamoDbJobStore(documents, { tableName: table, retentionDays: 30 }),
      slots: (provider: ProviderName) => new DynamoDbSlotPool(documents, table, provider),
      workflow: new SfnWorkflow(sfnClient(e), e.stateMachineArn),
      waiting: new DynamoDbWaitingLines(documents, table),
      tenantShares: async (tenants: readonly string[]) =>
        new Map(tenants.map((tenant) => [tenant, { weight: TENANT_DEFAULTS.weight }])),
      queue: new SqsJobQueue(sqsClient(e), {
        jobs: Object.fromEntries(Object.entries(e.jobQueues).map(([provider, { url }]) => [provider, url])),
        handOff: e.handOffQueueUrl,
      }),
      providers: async () =>
        longhaulHttp({
          baseUrl: e.providerUrl,
          webhookSecret: 'bench-reconcile-webhook-secret',
          deduplicates: true,
          submitTimeoutMs: 1000,
          readTimeoutMs: 1000,
        }),
      timeline: new DynamoDbTimeline(documents, { tableName: table, retentionDays: 30 }),
      now: () => new Date(),
      maxInFlight: { 'longhaul-http': 5, replicate: 5, deepgram: 5, bedrock: 5 },
      queuedGraceMs: 30_000,
      jobTimeoutMs: 600_000,
      slotWaitMaxSeconds: 1,
      pageSize: 100, // as the reconcile handler pages
      budgetMs: 150_000, // half the reconcile function's 5 minutes, as the handler gives it
      progress: new DynamoDbReconcilerProgress(documents, table),
      backlogs: new DynamoDbTenantBacklogs(documents, table),
      firstLook: async () => ({ inLine: true }),
      promotionsPerPass: 1000,
      // The jobs measured are all fine: a pass puts no event, and the section measures the table's reads.
      events: { publish: async () => {} },
      // Its jobs are single submissions: no parent, so the orphan sweep has nothing to remove.
      outputs: { getOutput: async () => undefined, deleteOutputs: async () => 0 },
      vectors: { delete: async () => {} },
    };
    const now = new Date();
    // Active jobs queued just now: a pass reads them and has nothing to fix.
    await write(Array.from({ length: ACTIVE }, (_, i) => benchJob(`bench-active-${i}`, 'queued', now)));
    const runs: ReconcileFigures['runs'][number][] = [];
    const measure = async (finished: number) => {
      const passes = [];
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        const report = await reconcile(deps);
        passes.push({ ...report, ms: performance.now() - started });
      }
      const run = {
        finished,
        itemsRead: median(passes.map((p) => p.itemsRead)),
        jobsChecked: median(passes.map((p) => p.jobsChecked)),
        passMs: round(median(passes.map((p) => p.ms)), 1),
      };
      runs.push(run);
      print(
        `measured: ${finished} finished + ${ACTIVE} active -> ${run.itemsRead} items read per pass, ` +
          `${run.jobsChecked} jobs checked, pass ${fmt(run.passMs, 0)} ms (median of 3 passes)`,
      );
    };
    await write(Array.from({ length: 100 }, (_, i) => benchJob(`bench-done-${i}`, 'succeeded', now)));
    await measure(100);
    await write(Array.from({ length: 9900 }, (_, i) => benchJob(`bench-done-${100 + i}`, 'succeeded', now)));
    await measure(10_000);
    return { active: ACTIVE, runs };
  } finally {
    await s.stop();
  }
}
