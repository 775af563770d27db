import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { PROBLEM_CONTENT_TYPE, problem } from '../../config/problems';
import { PROVIDER_NAMES } from '../../config/providers';
import type { Settings } from '../../config/settings';
import { DynamoDbJobStore } from '../../lambdas/adapters/dynamodb-job-store';
import { DynamoDbSlotPool } from '../../lambdas/adapters/dynamodb-slot-pool';
import { DynamoDbTimeline } from '../../lambdas/adapters/dynamodb-timeline';
import { JOB_ID_PATTERN } from '../../lambdas/domain/idempotency';
import { jobTimeline } from '../../lambdas/domain/intake';
import type { InFlightLimits, SlotPools, Workflow } from '../../lambdas/domain/ports';
import type { LocalRoute } from '../gateway';
import type { LocalResources } from '../resources';
import { usage } from '../usage';
import { captureEmf } from './capture';
import { MetricStore } from './metric-store';
import { OPS_PATHS } from './paths';
import { RecentlyFinishedJobs } from './recent-jobs';
import { opsReport } from './report';

/**
 * The local ops view: the figures an operator's CloudWatch dashboard shows
 * in AWS, for the local stack, which has no CloudWatch. It captures the
 * metrics the handlers emit (EMF on stdout, see ./capture.ts) and serves, on
 * the gateway's port and outside the REST API's routes:
 * - `GET /v1/admin/metrics` (admin key): the report of ./report.ts;
 * - `GET /dashboard/api/jobs/{id}/events` (admin key): a job and its
 *   timeline, which the API serves only to the job's tenant;
 * - `GET /dashboard` and its script, stylesheet and Chart.js (no key: the
 *   page asks for the admin key and sends it with each request).
 */

export interface OpsOptions {
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  /** The executions' histories, where a job's steps are (settled once the local Step Functions listens). */
  readonly workflow: Promise<Pick<Workflow, 'stepEvents'>>;
  readonly resources: Pick<LocalResources, 'jobTableName' | 'jobQueueUrl' | 'deadLetterQueueUrl'>;
  readonly settings: Pick<Settings, 'providers' | 'jobTypeProviders' | 'jobRetentionDays'>;
  readonly log: (line: string) => void;
}

export interface Ops {
  readonly routes: readonly LocalRoute[];
  /** Stops capturing. */
  stop(): void;
}

const PAGE_DIR = join(__dirname, 'page');
// Chart.js's package exports only its module builds; the browser build sits beside them in dist/.
const CHART_JS = join(dirname(require.resolve('chart.js')), 'chart.umd.min.js');

/** The page loads nothing from elsewhere and runs no inline code; the key in `?key=` never leaves as a referrer. */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
};

const POWERTOOLS_DEV = /^(1|true|yes|on)$/i;

function json(status: number, body: unknown) {
  return {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
    body: JSON.stringify(body),
  };
}

const notFound = () => {
  const body = problem('not-found', 'No such job.');
  return {
    status: body.status,
    headers: { 'content-type': PROBLEM_CONTENT_TYPE, 'cache-control': 'no-store' },
    body: JSON.stringify(body),
  };
};

function asset(file: string, contentType: string): LocalRoute['answer'] {
  const body = readFileSync(file);
  return async () => ({ status: 200, headers: { ...PAGE_HEADERS, 'content-type': contentType }, body });
}

export function startOps(options: OpsOptions): Ops {
  const { resources, settings } = options;
  const documents = DynamoDBDocumentClient.from(options.dynamodb, {
    marshallOptions: { removeUndefinedValues: true },
  });
  const stores = { tableName: resources.jobTableName, retentionDays: settings.jobRetentionDays };
  const jobs = new DynamoDbJobStore(documents, stores);
  const timeline = new DynamoDbTimeline(documents, stores);
  const pools = new Map(
    PROVIDER_NAMES.map((provider) => [
      provider,
      new DynamoDbSlotPool(
        documents,
        resources.jobTableName,
        provider,
        undefined,
        settings.providers[provider].rate,
      ),
    ]),
  );
  const slots: SlotPools = (provider) => pools.get(provider) as DynamoDbSlotPool;
  const metrics = new MetricStore();
  const finished = new RecentlyFinishedJobs();
  const since = new Date();

  const stopCapture = captureEmf({
    stream: process.stdout,
    onMetrics: (data, invocation) => {
      for (const datum of data) metrics.record(datum);
      finished.note(data, invocation);
    },
    // Read at each line: the handlers' environment is applied after capture starts.
    echo: () => !POWERTOOLS_DEV.test(process.env.POWERTOOLS_DEV ?? ''),
    log: options.log,
  });

  const routes: LocalRoute[] = [
    {
      method: 'GET',
      path: OPS_PATHS.metrics,
      auth: 'admin',
      answer: async () =>
        json(
          200,
          await opsReport({
            sqs: options.sqs,
            jobQueueUrl: resources.jobQueueUrl,
            deadLetterQueueUrl: resources.deadLetterQueueUrl,
            jobs,
            slots,
            maxInFlight: Object.fromEntries(
              PROVIDER_NAMES.map((provider) => [provider, settings.providers[provider].maxInFlight]),
            ) as InFlightLimits,
            jobTypeProviders: settings.jobTypeProviders,
            metrics,
            finished,
            since,
            usage: () => usage.read(),
          }),
        ),
    },
    {
      method: 'GET',
      path: OPS_PATHS.jobEvents,
      auth: 'admin',
      answer: async ({ pathParameters }) => {
        const id = pathParameters?.id ?? '';
        // Only job ids reach the table: the slot item and other records share it.
        if (!JOB_ID_PATTERN.test(id)) return notFound();
        const job = await jobs.get(id);
        if (!job) return notFound();
        const items = await jobTimeline(timeline, await options.workflow, job, new Date());
        const { tenantId, type, status, progress, attempts, error, createdAt, statusAt } = job;
        return json(200, {
          job: { id, tenantId, type, status, progress, attempts, error, createdAt, statusAt },
          items,
        });
      },
    },
    {
      method: 'GET',
      path: OPS_PATHS.page,
      auth: 'none',
      answer: asset(join(PAGE_DIR, 'index.html'), 'text/html; charset=utf-8'),
    },
    {
      method: 'GET',
      path: OPS_PATHS.script,
      auth: 'none',
      answer: asset(join(PAGE_DIR, 'app.js'), 'text/javascript; charset=utf-8'),
    },
    {
      method: 'GET',
      path: OPS_PATHS.style,
      auth: 'none',
      answer: asset(join(PAGE_DIR, 'app.css'), 'text/css; charset=utf-8'),
    },
    {
      method: 'GET',
      path: OPS_PATHS.chart,
      auth: 'none',
      answer: asset(CHART_JS, 'text/javascript; charset=utf-8'),
    },
  ];
  return { routes, stop: stopCapture };
}
