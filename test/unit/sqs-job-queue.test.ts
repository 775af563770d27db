import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { SqsJobQueue } from '../../lambdas/adapters/sqs-job-queue';

const sqs = mockClient(SQSClient);
const client = () => new SQSClient({ region: 'us-east-1' });

const IMAGES = 'https://sqs.example/jobs-replicate';
const TRANSCRIPTS = 'https://sqs.example/jobs-deepgram';
const GENERIC = 'https://sqs.example/jobs';
const HAND_OFF = 'https://sqs.example/hand-off';
const jobs = { replicate: IMAGES, deepgram: TRANSCRIPTS, 'longhaul-http': GENERIC };

const sent = () => sqs.commandCalls(SendMessageCommand).map((call) => call.args[0].input);

beforeEach(() => {
  sqs.reset();
  sqs.on(SendMessageCommand).resolves({ MessageId: 'm1' });
});

it("sends the job id alone to its provider's jobs queue", async () => {
  const queue = new SqsJobQueue(client(), { jobs });
  await queue.enqueue({ id: 'job_x', provider: 'replicate' });
  await queue.enqueue({ id: 'job_y', provider: 'deepgram' });
  expect(sent()).toEqual([
    { QueueUrl: IMAGES, MessageBody: '{"jobId":"job_x"}' },
    { QueueUrl: TRANSCRIPTS, MessageBody: '{"jobId":"job_y"}' },
  ]);
});

it('sends a job stored before providers were named to the first queue, which was the only one', async () => {
  await new SqsJobQueue(client(), { jobs }).enqueue({ id: 'job_x' });
  expect(sent()).toEqual([{ QueueUrl: GENERIC, MessageBody: '{"jobId":"job_x"}' }]);
});

it('delays a deferred job and carries how often it waited', async () => {
  const queue = new SqsJobQueue(client(), { jobs });
  await queue.enqueue({ id: 'job_x', provider: 'replicate' }, { delaySeconds: 4, deferrals: 3 });
  await queue.enqueue({ id: 'job_y', provider: 'replicate' }, { delaySeconds: 5000 });
  expect(sent()).toEqual([
    { QueueUrl: IMAGES, MessageBody: '{"jobId":"job_x","deferrals":3}', DelaySeconds: 4 },
    { QueueUrl: IMAGES, MessageBody: '{"jobId":"job_y"}', DelaySeconds: 900 },
  ]);
});

it("refuses a job whose provider's queue the function was not given, sending nothing", async () => {
  const queue = new SqsJobQueue(client(), { jobs: { replicate: IMAGES } });
  await expect(queue.enqueue({ id: 'job_x', provider: 'deepgram' })).rejects.toThrow(
    'this function has no jobs queue of provider deepgram',
  );
  expect(sent()).toEqual([]);
});

describe('the hand-off lane', () => {
  it("sends a job handed a slot to the hand-off queue, and every other job to its provider's queue", async () => {
    const lanes = new SqsJobQueue(client(), { jobs, handOff: HAND_OFF });
    await lanes.enqueue({ id: 'job_x', provider: 'deepgram' }, { handOff: true });
    await lanes.enqueue({ id: 'job_y', provider: 'deepgram' }, { inLine: true });
    await lanes.enqueue({ id: 'job_z', provider: 'replicate' }, { delaySeconds: 8, deferrals: 2 });
    expect(sent()).toEqual([
      { QueueUrl: HAND_OFF, MessageBody: '{"jobId":"job_x"}' },
      { QueueUrl: TRANSCRIPTS, MessageBody: '{"jobId":"job_y","inLine":true}' },
      { QueueUrl: IMAGES, MessageBody: '{"jobId":"job_z","deferrals":2}', DelaySeconds: 8 },
    ]);
  });

  it('refuses a hand-off where the function has no hand-off queue, sending nothing', async () => {
    const jobsOnly = new SqsJobQueue(client(), { jobs });
    await expect(jobsOnly.enqueue({ id: 'job_x', provider: 'replicate' }, { handOff: true })).rejects.toThrow(
      'this function has no hand-off queue: it may not hand a slot to a waiting job',
    );
    expect(sent()).toEqual([]);
  });

  it('refuses an ordinary enqueue where the function has the hand-off queue only, sending nothing', async () => {
    const laneOnly = new SqsJobQueue(client(), { handOff: HAND_OFF });
    await expect(laneOnly.enqueue({ id: 'job_x', provider: 'replicate' })).rejects.toThrow(
      'this function has no jobs queue of provider replicate',
    );
    expect(sent()).toEqual([]);
  });
});

it('needs at least one queue', () => {
  expect(() => new SqsJobQueue(client(), { jobs: {} })).toThrow('SqsJobQueue needs a jobs queue');
});

describe('enqueueMany', () => {
  const batches = () => sqs.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input);
  const ids = (count: number, provider: 'replicate' | 'deepgram', from = 0) =>
    Array.from({ length: count }, (_, n) => ({ id: `job_${provider}_${from + n}`, provider }));
  const entry = (id: string) => ({ Id: id, MessageBody: JSON.stringify({ jobId: id, inLine: true }) });

  beforeEach(() => {
    sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  });

  it("sends ten messages to a request, each provider's jobs to its own queue, and each job once", async () => {
    const images = ids(12, 'replicate');
    const transcripts = ids(3, 'deepgram');
    const failed = await new SqsJobQueue(client(), { jobs }).enqueueMany(
      [...images, ...transcripts, images[0] as (typeof images)[number]],
      { inLine: true },
    );

    expect(failed).toEqual(new Map());
    expect(batches()).toEqual([
      { QueueUrl: IMAGES, Entries: images.slice(0, 10).map((job) => entry(job.id)) },
      { QueueUrl: IMAGES, Entries: images.slice(10).map((job) => entry(job.id)) },
      { QueueUrl: TRANSCRIPTS, Entries: transcripts.map((job) => entry(job.id)) },
    ]);
    expect(sent()).toEqual([]);
  });

  it("sends again the entries SQS failed on its side, and answers those that were the sender's fault", async () => {
    const [a, b, c] = ids(3, 'replicate');
    sqs
      .on(SendMessageBatchCommand)
      .resolvesOnce({
        Failed: [
          { Id: a?.id, SenderFault: false, Code: 'InternalError' },
          { Id: b?.id, SenderFault: true, Code: 'InvalidParameterValue', Message: 'too long' },
        ],
      })
      .resolves({ Failed: [] });

    const failed = await new SqsJobQueue(client(), { jobs }).enqueueMany(
      [a, b, c].filter((job) => !!job),
      {
        inLine: true,
      },
    );

    expect(batches()).toEqual([
      { QueueUrl: IMAGES, Entries: [entry(a?.id as string), entry(b?.id as string), entry(c?.id as string)] },
      { QueueUrl: IMAGES, Entries: [entry(a?.id as string)] },
    ]);
    expect([...failed.keys()]).toEqual([b?.id]);
    expect(String(failed.get(b?.id as string))).toContain('InvalidParameterValue too long');
  });

  it('gives up on an entry SQS keeps failing after three sends, and on every entry of a batch that failed whole', async () => {
    const [a] = ids(1, 'replicate');
    const [d] = ids(1, 'deepgram');
    sqs
      .on(SendMessageBatchCommand, { QueueUrl: IMAGES })
      .resolves({ Failed: [{ Id: a?.id, SenderFault: false, Code: 'InternalError' }] })
      .on(SendMessageBatchCommand, { QueueUrl: TRANSCRIPTS })
      .rejects(new Error('queue unavailable'));

    const failed = await new SqsJobQueue(client(), { jobs }).enqueueMany([a, d].filter((job) => !!job));

    expect(batches().filter((input) => input.QueueUrl === IMAGES)).toHaveLength(3);
    expect(batches().filter((input) => input.QueueUrl === TRANSCRIPTS)).toHaveLength(1);
    expect([...failed.keys()].sort()).toEqual([a?.id, d?.id].sort());
    expect(String(failed.get(d?.id as string))).toContain('queue unavailable');
  });

  it("answers a job whose provider's queue the function was not given as not enqueued, and sends the rest", async () => {
    const [a] = ids(1, 'replicate');
    const [d] = ids(1, 'deepgram');
    const failed = await new SqsJobQueue(client(), { jobs: { replicate: IMAGES } }).enqueueMany(
      [a, d].filter((job) => !!job),
    );

    expect(batches()).toEqual([
      { QueueUrl: IMAGES, Entries: [{ Id: a?.id, MessageBody: JSON.stringify({ jobId: a?.id }) }] },
    ]);
    expect(String(failed.get(d?.id as string))).toContain('no jobs queue of provider deepgram');
  });
});
