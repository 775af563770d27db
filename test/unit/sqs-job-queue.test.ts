import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { SqsJobQueue } from '../../lambdas/adapters/sqs-job-queue';

const sqs = mockClient(SQSClient);

it('sends the job id alone to the jobs queue', async () => {
  sqs.on(SendMessageCommand).resolves({ MessageId: 'm1' });
  await new SqsJobQueue(new SQSClient({ region: 'us-east-1' }), { jobs: 'https://sqs.example/jobs' }).enqueue(
    'job_x',
  );
  expect(sqs.commandCalls(SendMessageCommand).map((call) => call.args[0].input)).toEqual([
    { QueueUrl: 'https://sqs.example/jobs', MessageBody: '{"jobId":"job_x"}' },
  ]);
});

it('delays a deferred job and carries how often it waited', async () => {
  sqs.reset();
  sqs.on(SendMessageCommand).resolves({ MessageId: 'm2' });
  const queue = new SqsJobQueue(new SQSClient({ region: 'us-east-1' }), { jobs: 'https://sqs.example/jobs' });
  await queue.enqueue('job_x', { delaySeconds: 4, deferrals: 3 });
  await queue.enqueue('job_y', { delaySeconds: 5000 });
  expect(sqs.commandCalls(SendMessageCommand).map((call) => call.args[0].input)).toEqual([
    { QueueUrl: 'https://sqs.example/jobs', MessageBody: '{"jobId":"job_x","deferrals":3}', DelaySeconds: 4 },
    { QueueUrl: 'https://sqs.example/jobs', MessageBody: '{"jobId":"job_y"}', DelaySeconds: 900 },
  ]);
});

describe('the hand-off lane', () => {
  const queue = () =>
    new SqsJobQueue(new SQSClient({ region: 'us-east-1' }), {
      jobs: 'https://sqs.example/jobs',
      handOff: 'https://sqs.example/hand-off',
    });

  it('sends a job handed a slot to the hand-off queue, and every other job to the jobs queue', async () => {
    sqs.reset();
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm3' });
    const lanes = queue();
    await lanes.enqueue('job_x', { handOff: true });
    await lanes.enqueue('job_y');
    await lanes.enqueue('job_z', { delaySeconds: 8, deferrals: 2 });
    expect(sqs.commandCalls(SendMessageCommand).map((call) => call.args[0].input)).toEqual([
      { QueueUrl: 'https://sqs.example/hand-off', MessageBody: '{"jobId":"job_x"}' },
      { QueueUrl: 'https://sqs.example/jobs', MessageBody: '{"jobId":"job_y"}' },
      {
        QueueUrl: 'https://sqs.example/jobs',
        MessageBody: '{"jobId":"job_z","deferrals":2}',
        DelaySeconds: 8,
      },
    ]);
  });

  it('refuses a hand-off where the function has no hand-off queue, sending nothing', async () => {
    sqs.reset();
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm4' });
    const jobsOnly = new SqsJobQueue(new SQSClient({ region: 'us-east-1' }), {
      jobs: 'https://sqs.example/jobs',
    });
    await expect(jobsOnly.enqueue('job_x', { handOff: true })).rejects.toThrow(
      'this function has no hand-off queue: it may not hand a slot to a waiting job',
    );
    expect(sqs.commandCalls(SendMessageCommand)).toEqual([]);
  });

  it('refuses an ordinary enqueue where the function has the hand-off queue only, sending nothing', async () => {
    sqs.reset();
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm5' });
    const laneOnly = new SqsJobQueue(new SQSClient({ region: 'us-east-1' }), {
      handOff: 'https://sqs.example/hand-off',
    });
    await expect(laneOnly.enqueue('job_x')).rejects.toThrow(
      'this function has no jobs queue: it may only hand slots to waiting jobs',
    );
    expect(sqs.commandCalls(SendMessageCommand)).toEqual([]);
  });
});
