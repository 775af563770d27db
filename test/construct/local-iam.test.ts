import { providerSecretEnv, resourceEnv } from '../../config/layout';
import { defaultSettings } from '../../config/settings';
import { IamPolicies, localReferences } from '../../local/iam';
import { loadTemplate } from '../../local/template';

jest.setTimeout(120_000);

/** The synthesized roles, resolved to the local resources the handler environment names. */
const template = loadTemplate(defaultSettings, {});
const environment = {
  [resourceEnv.jobTable]: 'longhaul-jobs',
  [resourceEnv.jobQueueUrl]: 'http://127.0.0.1:1/000000000000/longhaul-jobs-queue',
  [resourceEnv.jobQueueArn]: 'arn:aws:sqs:us-east-1:000000000000:longhaul-jobs-queue',
  [resourceEnv.handOffQueueUrl]: 'http://127.0.0.1:1/000000000000/longhaul-hand-off-queue',
  [resourceEnv.deadLetterQueueArn]: 'arn:aws:sqs:us-east-1:000000000000:longhaul-jobs-dlq',
  [resourceEnv.inputBucket]: 'longhaul-inputs',
  [resourceEnv.outputBucket]: 'longhaul-outputs',
  [resourceEnv.stateMachineArn]: 'arn:aws:states:us-east-1:000000000000:stateMachine:longhaul-jobs',
  [providerSecretEnv('longhaul-http')]:
    'arn:aws:secretsmanager:us-east-1:000000000000:secret:longhaul/provider-AbCdEf',
};
const policies = new IamPolicies(template, localReferences(template, environment));
const allowed = async (service: string, action: string, resource: string) =>
  (await policies.decide(service, { action, resource })).allowed;

it('resolves references through the handler environment and derives ARNs from names', async () => {
  await expect(
    allowed(
      'dispatch',
      'states:StartExecution',
      'arn:aws:states:us-east-1:000000000000:stateMachine:longhaul-jobs',
    ),
  ).resolves.toBe(true);
  await expect(
    allowed(
      'api',
      'dynamodb:Query',
      'arn:aws:dynamodb:us-east-1:000000000000:table/longhaul-jobs/index/active',
    ),
  ).resolves.toBe(true);
  await expect(
    allowed(
      'reconcile',
      'states:DescribeExecution',
      'arn:aws:states:us-east-1:000000000000:execution:longhaul-jobs:job_1',
    ),
  ).resolves.toBe(true);
});

it("lets the workflow delete a failed job's outputs, and nothing of the inputs", async () => {
  await expect(allowed('workflow', 's3:ListBucket', 'arn:aws:s3:::longhaul-outputs')).resolves.toBe(true);
  await expect(
    allowed('workflow', 's3:DeleteObject', 'arn:aws:s3:::longhaul-outputs/outputs/dev/job_1/hls/master.m3u8'),
  ).resolves.toBe(true);
  await expect(
    allowed('workflow', 's3:DeleteObject', 'arn:aws:s3:::longhaul-inputs/inputs/dev/x'),
  ).resolves.toBe(false);
});

it('denies what a role was not granted', async () => {
  await expect(
    allowed('authorizer', 'dynamodb:PutItem', 'arn:aws:dynamodb:us-east-1:000000000000:table/longhaul-jobs'),
  ).resolves.toBe(false);
  await expect(allowed('workflow', 's3:ListBucket', 'arn:aws:s3:::longhaul-inputs')).resolves.toBe(false);
  await expect(
    allowed('dispatch', 's3:GetObject', 'arn:aws:s3:::longhaul-inputs/inputs/dev/x'),
  ).resolves.toBe(false);
});

it('grants ManageConnections on the template stage of the local WebSocket API only', async () => {
  const connection = (stage: string) =>
    `arn:aws:execute-api:us-east-1:000000000000:local/${stage}/POST/@connections/abc=`;
  await expect(
    allowed('workflow', 'execute-api:ManageConnections', connection(template.webSocketStageName())),
  ).resolves.toBe(true);
  await expect(allowed('workflow', 'execute-api:ManageConnections', connection('other'))).resolves.toBe(
    false,
  );
});

it('lets exactly the workflow steps and the reconciler send to the hand-off queue, whose ARN it derives from its URL', async () => {
  const lane = 'arn:aws:sqs:us-east-1:000000000000:longhaul-hand-off-queue';
  const jobs = 'arn:aws:sqs:us-east-1:000000000000:longhaul-jobs-queue';
  const senders = [];
  for (const service of ['api', 'authorizer', 'dispatch', 'workflow', 'stream', 'reconcile']) {
    if (await allowed(service, 'sqs:SendMessage', lane)) senders.push(service);
  }
  expect(senders).toEqual(['workflow', 'reconcile']);
  await expect(allowed('dispatch', 'sqs:ReceiveMessage', lane)).resolves.toBe(true);
  await expect(allowed('dispatch', 'sqs:DeleteMessage', lane)).resolves.toBe(true);
  // The steps function sends the chunk jobs of audio.publish to the jobs queue, as intake sends new jobs.
  await expect(allowed('workflow', 'sqs:SendMessage', jobs)).resolves.toBe(true);
  await expect(allowed('stream', 'sqs:SendMessage', jobs)).resolves.toBe(false);
  await expect(allowed('reconcile', 'sqs:SendMessage', jobs)).resolves.toBe(true);
});
