import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { SqsJobQueue } from '../../lambdas/adapters/sqs-job-queue';

const sqs = mockClient(SQSClient);

it('sends the job id alone to the jobs queue', async () => {
  sqs.on(SendMessageCommand).resolves({ MessageId: 'm1' });
  await new SqsJobQueue(new SQSClient({ region: 'us-east-1' }), 'https://sqs.example/jobs').enqueue('job_x');
  expect(sqs.commandCalls(SendMessageCommand).map((call) => call.args[0].input)).toEqual([
    { QueueUrl: 'https://sqs.example/jobs', MessageBody: '{"jobId":"job_x"}' },
  ]);
});

it('delays a deferred job and carries how often it waited', async () => {
  sqs.reset();
  sqs.on(SendMessageCommand).resolves({ MessageId: 'm2' });
  const queue = new SqsJobQueue(new SQSClient({ region: 'us-east-1' }), 'https://sqs.example/jobs');
  await queue.enqueue('job_x', { delaySeconds: 4, deferrals: 3 });
  await queue.enqueue('job_y', { delaySeconds: 5000 });
  expect(sqs.commandCalls(SendMessageCommand).map((call) => call.args[0].input)).toEqual([
    { QueueUrl: 'https://sqs.example/jobs', MessageBody: '{"jobId":"job_x","deferrals":3}', DelaySeconds: 4 },
    { QueueUrl: 'https://sqs.example/jobs', MessageBody: '{"jobId":"job_y"}', DelaySeconds: 900 },
  ]);
});
