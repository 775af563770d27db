import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  EventBridgeClient,
  EventBridgeServiceException,
  PutEventsCommand,
} from '@aws-sdk/client-eventbridge';
import {
  CreateIndexCommand,
  CreateVectorBucketCommand,
  DeleteVectorsCommand,
  PutVectorsCommand,
  QueryVectorsCommand,
  S3VectorsClient,
  S3VectorsServiceException,
} from '@aws-sdk/client-s3vectors';
import { providerSecretEnv, resourceEnv } from '../../config/layout';
import { defaultSettings } from '../../config/settings';
import { startEventBridgeEmulator } from '../../local/emulators/eventbridge';
import { startS3VectorsEmulator } from '../../local/emulators/s3-vectors';
import { checkRequests, IamPolicies, localReferences, requestScope } from '../../local/iam';
import { ensureVectorIndex, localResourceNames } from '../../local/resources';
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
  [resourceEnv.vectorBucketName]: localResourceNames.vectorBucket,
  [resourceEnv.vectorIndexName]: localResourceNames.vectorIndex,
  [resourceEnv.eventBusName]: 'Longhaul',
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

it('lets exactly the functions that hand freed slots on send to the hand-off queue, whose ARN it derives from its URL', async () => {
  const lane = 'arn:aws:sqs:us-east-1:000000000000:longhaul-hand-off-queue';
  const jobs = 'arn:aws:sqs:us-east-1:000000000000:longhaul-jobs-queue';
  const senders = [];
  for (const service of ['api', 'authorizer', 'dispatch', 'workflow', 'stream', 'reconcile']) {
    if (await allowed(service, 'sqs:SendMessage', lane)) senders.push(service);
  }
  expect(senders.sort()).toEqual(['api', 'dispatch', 'reconcile', 'workflow']);
  await expect(allowed('dispatch', 'sqs:ReceiveMessage', lane)).resolves.toBe(true);
  await expect(allowed('dispatch', 'sqs:DeleteMessage', lane)).resolves.toBe(true);
  // The steps function sends the chunk jobs of audio.publish to the jobs queue, as intake sends new jobs.
  await expect(allowed('workflow', 'sqs:SendMessage', jobs)).resolves.toBe(true);
  await expect(allowed('stream', 'sqs:SendMessage', jobs)).resolves.toBe(false);
  await expect(allowed('reconcile', 'sqs:SendMessage', jobs)).resolves.toBe(true);
});

/** Every function of the stack, by its service name. */
const SERVICES = [
  'api',
  'authorizer',
  'provider-events',
  'dispatch',
  'workflow',
  'compute',
  'stream',
  'reconcile',
  'fire',
];

/** The functions whose role may do `action` on `resource`. */
async function whoMay(action: string, resource: string): Promise<string[]> {
  const services = [];
  for (const service of SERVICES) if (await allowed(service, action, resource)) services.push(service);
  return services;
}

describe('the embedding model', () => {
  it('lets exactly the API and the workflow steps invoke the chosen model, and no other model', async () => {
    const model = (id: string) => `arn:aws:bedrock:us-east-1::foundation-model/${id}`;
    const may = (resource: string) => whoMay('bedrock:InvokeModel', resource);
    await expect(may(model('amazon.titan-embed-text-v2:0'))).resolves.toEqual(['api', 'workflow']);
    await expect(may(model('cohere.embed-multilingual-v3'))).resolves.toEqual([]);
    await expect(may(model('anthropic.claude-3-haiku-20240307-v1:0'))).resolves.toEqual([]);
  });
});

describe('the passage index', () => {
  const index = `arn:aws:s3vectors:us-east-1:000000000000:bucket/${localResourceNames.vectorBucket}/index/${localResourceNames.vectorIndex}`;

  it("resolves the index's ARN from the names the functions are told, and lets exactly the workflow write, the reconciler's sweep delete, the API query, and both rewrite metadata", async () => {
    const may = (action: string, resource = index) => whoMay(action, resource);
    // A media item's metadata change (API) and a version's switch (workflow) put vectors back with new metadata.
    await expect(may('s3vectors:PutVectors')).resolves.toEqual(['api', 'workflow']);
    await expect(may('s3vectors:DeleteVectors')).resolves.toEqual(['workflow', 'reconcile']);
    await expect(may('s3vectors:QueryVectors')).resolves.toEqual(['api']);
    await expect(may('s3vectors:GetVectors')).resolves.toEqual(['api', 'workflow']);
    await expect(may('s3vectors:ListVectors')).resolves.toEqual([]);
    await expect(may('s3vectors:QueryVectors', `${index}-other`)).resolves.toEqual([]);
  });

  it('holds the SDK calls of each role to its grants on the local S3 Vectors, which the handler environment points the SDK at', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'longhaul-local-iam-'));
    const emulator = await startS3VectorsEmulator({ dataDir });
    let caller: string | undefined;
    const stopChecking = checkRequests({
      scope: requestScope(template),
      principal: () => (caller ? { name: caller, policies: policies.of(caller) } : undefined),
      log: () => undefined,
    });
    // What the handlers do: a client with no endpoint of its own, which the SDK reads from the environment.
    process.env.AWS_ENDPOINT_URL_S3VECTORS = emulator.url;
    const client = new S3VectorsClient({
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    const at = {
      vectorBucketName: localResourceNames.vectorBucket,
      indexName: localResourceNames.vectorIndex,
    };
    const denial = async (act: Promise<unknown>) => {
      try {
        await act;
      } catch (error) {
        expect(error).toBeInstanceOf(S3VectorsServiceException);
        return {
          name: (error as S3VectorsServiceException).name,
          status: (error as S3VectorsServiceException).$metadata.httpStatusCode,
        };
      }
      throw new Error('expected a denial, got a success');
    };
    const accessDenied = { name: 'AccessDeniedException', status: 403 };
    try {
      await ensureVectorIndex(
        client,
        { bucket: at.vectorBucketName, index: at.indexName },
        template.vectorIndex(template.resourceOfVariable(resourceEnv.vectorIndexName)),
      );
      const dimension = defaultSettings.embeddingDimensions;
      const put = () =>
        client.send(
          new PutVectorsCommand({
            ...at,
            vectors: [
              {
                key: 'acme/job_1/0',
                data: { float32: Array.from({ length: dimension }, () => 1) },
                metadata: { tenant: 'acme', text: 't' },
              },
            ],
          }),
        );
      const search = (filtered: boolean) =>
        client.send(
          new QueryVectorsCommand({
            ...at,
            topK: 1,
            queryVector: { float32: Array.from({ length: dimension }, () => 1) },
            ...(filtered ? { filter: { tenant: 'acme' }, returnMetadata: true } : {}),
          }),
        );
      caller = 'workflow';
      await put();
      await expect(denial(search(false))).resolves.toEqual(accessDenied);
      caller = 'api';
      await expect(search(true)).resolves.toEqual(
        expect.objectContaining({
          vectors: [{ key: 'acme/job_1/0', metadata: { tenant: 'acme', text: 't' } }],
        }),
      );
      // The API rewrites metadata, and never deletes: that is the workflow's and the reconciler's.
      await expect(
        denial(client.send(new DeleteVectorsCommand({ ...at, keys: ['acme/job_1/0'] }))),
      ).resolves.toEqual(accessDenied);
      caller = 'reconcile';
      await expect(denial(put())).resolves.toEqual(accessDenied);
      caller = 'dispatch';
      await expect(denial(search(false))).resolves.toEqual(accessDenied);
      // Setting up the index itself is no function's business.
      caller = 'workflow';
      await expect(
        denial(client.send(new CreateVectorBucketCommand({ vectorBucketName: 'another' }))),
      ).resolves.toEqual(accessDenied);
      await expect(
        denial(
          client.send(
            new CreateIndexCommand({
              ...at,
              indexName: 'another',
              dataType: 'float32',
              dimension: 1,
              distanceMetric: 'cosine',
            }),
          ),
        ),
      ).resolves.toEqual(accessDenied);
    } finally {
      caller = undefined;
      delete process.env.AWS_ENDPOINT_URL_S3VECTORS;
      client.destroy();
      stopChecking();
      await emulator.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the event bus', () => {
  const bus = (name: string) => `arn:aws:events:us-east-1:000000000000:event-bus/${name}`;

  it("resolves the bus's ARN from the name the functions are told, and lets exactly the API, the dispatcher, the workflow and the reconciler put on it", async () => {
    await expect(whoMay('events:PutEvents', bus('Longhaul'))).resolves.toEqual([
      'api',
      'dispatch',
      'workflow',
      'reconcile',
    ]);
    await expect(whoMay('events:PutEvents', bus('default'))).resolves.toEqual([]);
    await expect(whoMay('events:PutRule', bus('Longhaul'))).resolves.toEqual([]);
  });

  it('holds PutEvents of each role to its grant on the local EventBridge', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'longhaul-local-iam-'));
    const emulator = await startEventBridgeEmulator({
      host: '127.0.0.1',
      region: 'us-east-1',
      accountId: '000000000000',
      buses: ['Longhaul', 'another'],
      dataDir,
    });
    let caller: string | undefined;
    const stopChecking = checkRequests({
      scope: requestScope(template),
      principal: () => (caller ? { name: caller, policies: policies.of(caller) } : undefined),
      log: () => undefined,
    });
    process.env.AWS_ENDPOINT_URL_EVENTBRIDGE = emulator.endpoint;
    const client = new EventBridgeClient({
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    const put = (busName: string) =>
      client.send(
        new PutEventsCommand({
          Entries: [{ EventBusName: busName, Source: 'longhaul', DetailType: 'job.succeeded', Detail: '{}' }],
        }),
      );
    const denial = async (act: Promise<unknown>) => {
      try {
        await act;
      } catch (error) {
        expect(error).toBeInstanceOf(EventBridgeServiceException);
        return (error as EventBridgeServiceException).name;
      }
      throw new Error('expected a denial, got a success');
    };
    try {
      caller = 'workflow';
      await expect(put('Longhaul')).resolves.toMatchObject({ FailedEntryCount: 0 });
      await expect(denial(put('another'))).resolves.toBe('AccessDeniedException');
      caller = 'api';
      await expect(put(bus('Longhaul'))).resolves.toMatchObject({ FailedEntryCount: 0 });
      caller = 'stream';
      await expect(denial(put('Longhaul'))).resolves.toBe('AccessDeniedException');
      caller = undefined;
      expect(emulator.events('Longhaul')).toHaveLength(2);
      expect(emulator.events('another')).toHaveLength(0);
    } finally {
      caller = undefined;
      delete process.env.AWS_ENDPOINT_URL_EVENTBRIDGE;
      client.destroy();
      stopChecking();
      await emulator.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
