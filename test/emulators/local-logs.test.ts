import { pollUntil, type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';
import { apiCall, UNTHROTTLED_API } from '../e2e/support/api';

/**
 * What `npm start` prints of the handlers' logs: by default one short line
 * per record (time, function, level, message, the record's own keys), and
 * with LOG_FORMAT=json each Powertools record as one line of JSON. Either way
 * each line names the function that wrote it, while invocations of several
 * functions overlap in the one process.
 */

jest.setTimeout(60_000);

const TENANT_KEY = 'logs-tenant-key-3c81';
const JOBS = 6;

let short: RunningLocalStack;
let json: RunningLocalStack;
const jobIds: Record<'short' | 'json', string[]> = { short: [], json: [] };

/** Submits JOBS jobs at once and waits until every one has succeeded. */
async function runJobs(stack: RunningLocalStack, ids: string[]): Promise<void> {
  const created = await Promise.all(
    Array.from({ length: JOBS }, async (_, index) => {
      const response = await apiCall(() => stack.baseUrl, TENANT_KEY)(
        'POST',
        '/v1/jobs',
        { type: 'image.generate', input: { prompt: `lighthouse ${index}` } },
        `logs-${index}`,
      );
      expect(response.status).toBe(202);
      return response.body.id as string;
    }),
  );
  ids.push(...created);
  await Promise.all(
    created.map((id) =>
      pollUntil(
        async () => {
          const response = await fetch(`${stack.baseUrl}/v1/jobs/${id}`, {
            headers: { 'x-api-key': TENANT_KEY },
          });
          const job = (await response.json()) as { status: string };
          return job.status === 'succeeded' ? job : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100, description: `job ${id} to succeed` },
      ),
    ),
  );
}

const start = (format: string) =>
  startLocalStack({
    env: {
      LOG_FORMAT: format,
      LONGHAUL_API_KEYS: `${TENANT_KEY}:acme`,
      SIM_JOB_MS: '200',
      SIM_PROGRESS_HZ: '10',
      ...UNTHROTTLED_API,
    },
  });

beforeAll(async () => {
  [short, json] = await Promise.all([start('short'), start('json')]);
  await Promise.all([runJobs(short, jobIds.short), runJobs(json, jobIds.json)]);
});

afterAll(async () => {
  await Promise.all([short?.stop(), json?.stop()]);
});

/** The stack's own lines say `longhaul local:`; every other line is a handler's. */
const handlerLines = (stack: RunningLocalStack) =>
  stack
    .output()
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('longhaul local:'));

const SHORT_LINE = /^\d\d:\d\d:\d\d\.\d{3} (\S+)\s+(DEBUG|INFO|WARN|ERROR|CRITICAL)\s+(.+)$/;

test('by default each log record is one short line: time, function, level, message and its keys', () => {
  const lines = handlerLines(short);
  // Every handler line is a short line: no JSON, and none of a record spread over lines.
  expect(lines.filter((line) => !SHORT_LINE.test(line))).toEqual([]);

  for (const id of jobIds.short) {
    const accepted = lines.filter((line) => line.includes(' job accepted ') && line.includes(`jobId=${id}`));
    expect(accepted).toHaveLength(1);
    expect(accepted[0]).toMatch(
      new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} api {13}INFO  job accepted .*jobId=${id}( |$)`),
    );
    expect(accepted[0]).toMatch(/ tenantId=acme( |$)/);
  }
  // Each dispatch names its job (records of one batch are handled at once) and the dispatcher.
  const dispatched = lines.filter((line) => line.includes(' job dispatched '));
  expect(dispatched.length).toBeGreaterThanOrEqual(JOBS);
  for (const line of dispatched) {
    expect(SHORT_LINE.exec(line)?.[1]).toBe('dispatch');
    expect(jobIds.short).toContain(/ jobId=(\S+)/.exec(line)?.[1]);
  }
  // A few lines per job, not the pages of indented JSON of before.
  expect(lines.length).toBeLessThan(JOBS * 20);
});

test('with LOG_FORMAT=json each record is one line of JSON, naming the function that wrote it', () => {
  const lines = handlerLines(json);
  const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(records.length).toBeGreaterThan(0);

  const accepted = records.filter((record) => record.message === 'job accepted');
  expect(accepted.map((record) => record.jobId).sort()).toEqual([...jobIds.json].sort());
  // Which function writes which record: the api accepts, the dispatcher dispatches, the provider
  // events function applies the provider's webhooks, and all of them ran at once.
  const writers: Record<string, string> = {
    'job accepted': 'longhaul-api',
    'job dispatched': 'longhaul-dispatch',
    'provider event applied': 'longhaul-provider-events',
  };
  const signed = records
    .filter((record) => writers[record.message as string] !== undefined)
    .map((record) => ({ message: record.message, function_name: record.function_name }));
  expect(signed).toEqual(
    signed.map(({ message }) => ({ message, function_name: writers[message as string] })),
  );
  for (const message of Object.keys(writers)) {
    expect(signed.filter((record) => record.message === message).length).toBeGreaterThanOrEqual(JOBS);
  }
  for (const record of records.filter((r) => r.message === 'job dispatched')) {
    expect(jobIds.json).toContain(record.jobId);
  }
});
