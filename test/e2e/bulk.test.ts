import { Longhaul } from '../../client';
import { jobIdOf } from '../../lambdas/domain/job';
import { pollUntil, type RunningLocalStack, startLocalStack } from '../../local/harness/local-stack';
import { simulatorCall } from './support/simulator';

/**
 * Bulk cancel and replay over the SDK and real HTTP against the local stack:
 * queued jobs canceled in bulk are never sent to the provider, failed jobs
 * replayed by an operator run again as new jobs with `replayOf`, a job in
 * review is refused, and a retried replay replays nothing twice.
 */

jest.setTimeout(120_000);

const KEY = 'bulk-key-7c1d';
const ADMIN_KEY = 'bulk-admin-key-7c1d';
const TENANT = 'bulker';

let stack: RunningLocalStack;
let client: Longhaul;
let sim: ReturnType<typeof simulatorCall>;
beforeAll(async () => {
  stack = await startLocalStack({
    env: {
      LONGHAUL_API_KEYS: `${KEY}:${TENANT}`,
      LONGHAUL_ADMIN_KEY: ADMIN_KEY,
      // One slot: a stalled job holds it, so the jobs after it stay queued until they are canceled.
      MAX_IN_FLIGHT: '1',
      SIM_JOB_MS: '300',
      SIM_PROGRESS_HZ: '1',
      // A submission whose answer is lost cannot be resent: its job goes to review.
      SIM_IDEMPOTENT: '0',
      PROVIDER_IDEMPOTENT: '0',
      PROVIDER_TIMEOUT_MS: '1000',
      SLOT_WAIT_MAX_SECONDS: '1',
      // A submission whose outcome is unknown holds the one slot until the job timeout has passed, whatever
      // an operator resolves: a short one, so the replays after the review's run soon.
      JOB_TIMEOUT_MS: '12000',
      AWAIT_HEARTBEAT_SECONDS: '10',
    },
    // Start-up shares two cores with the other suites.
    readyTimeoutMs: 60_000,
  });
  client = new Longhaul({ baseUrl: stack.baseUrl, apiKey: KEY, adminKey: ADMIN_KEY });
  sim = simulatorCall(stack.endpoints.providerUrl);
});
afterAll(async () => {
  await stack?.stop();
});

const image = (prompt: string) => ({ type: 'image.generate' as const, input: { prompt } });
const submit = async (prompt: string) => (await client.createJob(client.userAction(), image(prompt))).job;
const statusOf = async (id: string) => (await client.getJob(id)).status;
const settled = (id: string, status: string) =>
  pollUntil(async () => (await statusOf(id)) === status, {
    timeoutMs: 30_000,
    description: `${id} ${status}`,
  });
/** The job ids the provider was charged for. */
const charged = async (): Promise<string[]> =>
  ((await sim('/_sim/ledger')).submissions as { idempotencyKey: string }[]).map((s) =>
    jobIdOf(s.idempotencyKey),
  );

let queued: string[];
let stalled: string;

describe('bulk cancel', () => {
  it('counts on a dry run, then cancels the queued jobs, which the provider never sees', async () => {
    await sim('/_sim/faults', { mode: 'stall', count: 1 });
    stalled = (await submit('holds the only slot')).id;
    await settled(stalled, 'running');
    queued = [(await submit('waits 1')).id, (await submit('waits 2')).id, (await submit('waits 3')).id];

    const dry = await client.cancelJobs({ status: ['queued'], type: 'image.generate' }, { dryRun: true });
    expect(dry).toEqual({ matched: 3, canceled: 0, cancelRequested: 0, nextCursor: null });
    expect(await Promise.all(queued.map(statusOf))).toEqual(['queued', 'queued', 'queued']);

    const done = await client.cancelJobs({ status: ['queued'] });
    expect(done).toEqual({ matched: 3, canceled: 3, cancelRequested: 0, nextCursor: null });
    expect(await Promise.all(queued.map(statusOf))).toEqual(['canceled', 'canceled', 'canceled']);

    // The running job is canceled as a single cancel would: stopped at the provider, its slot freed.
    expect(await client.cancelAllJobs({ status: ['running'] })).toEqual({
      matched: 1,
      canceled: 1,
      cancelRequested: 0,
    });
    expect(await statusOf(stalled)).toBe('canceled');
    expect(await charged()).toEqual([stalled]);
  });

  it('refuses a bad filter with pointers and changes nothing', async () => {
    const response = await fetch(`${stack.baseUrl}/v1/jobs/cancel`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({
        filter: { status: ['paused'], createdAfter: 'yesterday', color: 'red' },
      }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { code: string; errors: { pointer: string }[] };
    expect(body.code).toBe('validation-failed');
    expect(body.errors.map((error: { pointer: string }) => error.pointer).sort()).toEqual([
      '/filter',
      '/filter/createdAfter',
      '/filter/status/0',
    ]);
  });
});

describe('replay', () => {
  it('replays failed jobs as new jobs that run, refuses the job in review, and replays nothing twice', async () => {
    await sim('/_sim/faults', { mode: 'fail-job', count: 2 });
    const failed = [(await submit('fails 1')).id, (await submit('fails 2')).id];
    await Promise.all(failed.map((id) => settled(id, 'failed')));
    await sim('/_sim/faults', { mode: 'accept-then-drop', count: 1 });
    const review = (await submit('answer lost')).id;
    await settled(review, 'needs_review');

    const filter = { tenant: TENANT, status: ['failed', 'needs_review'] } as const;
    const result = await client.replayJobs(filter, 'provider fixed');

    expect(result).toMatchObject({
      matched: 3,
      replayed: 2,
      alreadyReplayed: 0,
      refused: [{ id: review, reason: 'needs-review' }],
      nextCursor: null,
    });
    expect(result.jobs.map((job) => job.replayOf).sort()).toEqual([...failed].sort());
    // The same request again (an operator retrying after a timeout) replays nothing. Once the job in
    // review is resolved, the same request replays it and only it; the replays run once the reconciler
    // frees the slot the review's unknown outcome holds (at the job timeout).
    await client.resolve(review, { outcome: 'failed', note: 'checked at the provider: not run' });
    const again = await client.replayJobs(filter, 'provider fixed');
    expect(again).toMatchObject({ matched: 3, replayed: 1, alreadyReplayed: 2, refused: [] });
    const replays = [...again.jobs].sort((a, b) => a.replayOf.localeCompare(b.replayOf));
    expect(replays.map((job) => job.replayOf)).toEqual([...failed, review].sort());
    for (const replay of result.jobs) expect(replays).toContainEqual(replay);

    for (const replay of replays) {
      await settled(replay.id, 'succeeded');
      expect(await client.getJob(replay.id)).toMatchObject({ replayOf: replay.replayOf });
    }
    // The originals are as they were.
    expect(await Promise.all(failed.map(statusOf))).toEqual(['failed', 'failed']);
    // Each replay was charged once; the canceled jobs never were.
    const ledger = await charged();
    for (const replay of replays) expect(ledger.filter((id) => id === replay.id)).toHaveLength(1);
    for (const id of queued) expect(ledger).not.toContain(id);
  });

  it('is for the admin key alone', async () => {
    const response = await fetch(`${stack.baseUrl}/v1/admin/jobs/replay`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ filter: { status: ['failed'] }, note: 'x' }),
    });
    expect(response.status).toBe(403);
  });
});
