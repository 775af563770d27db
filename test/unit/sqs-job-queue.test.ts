import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
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
