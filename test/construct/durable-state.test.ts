import { Duration } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { CfnSubscription } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { apiKeyTable, jobTable } from '../../config/layout';
import { LEGACY_PROVIDER, PROVIDER_NAMES, PROVIDERS, type ProviderName } from '../../config/providers';
import { defaultSettings, queueVisibilityTimeoutSeconds } from '../../config/settings';
import { Alarms } from '../../lib/constructs/alarms';
import { JobInputs } from '../../lib/constructs/job-inputs';
import { JobOutputs } from '../../lib/constructs/job-outputs';
import { JobQueue } from '../../lib/constructs/job-queue';
import { JobStore } from '../../lib/constructs/job-store';
import { ProviderSecrets } from '../../lib/constructs/provider-secrets';
import { LonghaulStack } from '../../lib/longhaul-stack';
import { providerIdSuffix } from '../../lib/provider-ids';
import { logicalIdAt, longhaulTemplate, SYNTH_TIMEOUT_MS, stackUnderTest } from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

/** What the job queues are given in the stack of their own: unlike the app's, so a test sees them passed on. */
const VISIBILITY_SECONDS = 240;
const MAX_RECEIVES = 7;

/** The durable state alone: the tables, queues, buckets, secrets and the alarm topic, in a stack of their own. */
let template: Template;
/** The whole app, for what is about it: how it wires the durable state to the rest, and how many of each there are. */
let app: Template;

beforeAll(() => {
  const stack = stackUnderTest();
  const alarms = new Alarms(stack, 'Alarms', { email: 'ops@example.com' });
  new JobStore(stack, 'JobStore');
  new JobQueue(stack, 'JobQueue', {
    visibilityTimeout: Duration.seconds(VISIBILITY_SECONDS),
    maxReceiveCount: MAX_RECEIVES,
    oldestMessageAlarmAge: Duration.minutes(15),
    alarms,
  });
  const inputs = new JobInputs(stack, 'JobInputs', { expirationDays: 38 });
  new JobOutputs(stack, 'JobOutputs', { expirationDays: 37, accessLogBucket: inputs.accessLogBucket });
  new ProviderSecrets(stack, 'Secrets');
  template = Template.fromStack(stack);
  app = longhaulTemplate();
});

/** That the policy of `type` on the queue or bucket with logical id `id` refuses every request over plain HTTP. */
function expectDeniesPlainHttp(type: 'AWS::SQS::QueuePolicy' | 'AWS::S3::BucketPolicy', id: string) {
  const [target, action] =
    type === 'AWS::SQS::QueuePolicy'
      ? [{ Queues: [{ Ref: id }] }, 'sqs:*']
      : [{ Bucket: { Ref: id } }, 's3:*'];
  template.hasResourceProperties(type, {
    ...target,
    PolicyDocument: {
      Statement: Match.arrayWith([
        Match.objectLike({
          Effect: 'Deny',
          Principal: { AWS: '*' },
          Action: action,
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        }),
      ]),
    },
  });
}

describe('job table', () => {
  const path = 'Test/JobStore/JobTable/Resource';

  test('is keyed by string pk and sk, on demand, with TTL on expiresAt', () => {
    const id = logicalIdAt(template, 'AWS::DynamoDB::Table', path);
    const table = template.toJSON().Resources[id];
    expect(table.Properties.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(table.Properties.BillingMode).toBe('PAY_PER_REQUEST');
    expect(table.Properties.TimeToLiveSpecification).toEqual({ AttributeName: 'expiresAt', Enabled: true });
  });

  test('has exactly the indexes of config/layout.ts, with their keys and projections', () => {
    const id = logicalIdAt(template, 'AWS::DynamoDB::Table', path);
    const table = template.toJSON().Resources[id];
    expect(table.Properties.GlobalSecondaryIndexes).toEqual(
      jobTable.indexes.map((index) => ({
        IndexName: index.name,
        KeySchema: [
          { AttributeName: index.partitionKey, KeyType: 'HASH' },
          { AttributeName: index.sortKey, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: index.projection },
      })),
    );
    // The status-keyed `active` index is gone (one index removed in this update, as CloudFormation
    // allows): nothing read it, and every status write paid for its copy.
    expect(jobTable.indexes.map((index) => index.name)).toEqual([
      'byTenant',
      'byTenantStatus',
      'activeByProvider',
      'due',
    ]);
    const stringAttributes = [
      'pk',
      'sk',
      'tenantId',
      'createdAt',
      'tenantStatus',
      'activeKey',
      'statusAt',
      'dueShard',
      'runAt',
    ];
    expect(table.Properties.AttributeDefinitions).toEqual(
      stringAttributes.map((name) => ({ AttributeName: name, AttributeType: 'S' })),
    );
  });

  test('has point-in-time recovery, KMS encryption at rest, deletion protection and is retained', () => {
    const id = logicalIdAt(template, 'AWS::DynamoDB::Table', path);
    const table = template.toJSON().Resources[id];
    expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    // SSEEnabled without a key id: the AWS-managed key alias/aws/dynamodb.
    expect(table.Properties.SSESpecification).toEqual({ SSEEnabled: true });
    expect(table.Properties.DeletionProtectionEnabled).toBe(true);
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.UpdateReplacePolicy).toBe('Retain');
  });
});

describe('API key table', () => {
  test("is keyed by the key hash, with a keys-only index of each tenant's keys and the same protections as the job table", () => {
    const id = logicalIdAt(template, 'AWS::DynamoDB::Table', 'Test/JobStore/ApiKeyTable/Resource');
    const table = template.toJSON().Resources[id];
    expect(table.Properties).toEqual(
      expect.objectContaining({
        KeySchema: [{ AttributeName: apiKeyTable.partitionKey, KeyType: 'HASH' }],
        AttributeDefinitions: [
          { AttributeName: 'keyHash', AttributeType: 'S' },
          { AttributeName: 'tenantId', AttributeType: 'S' },
          { AttributeName: 'createdAt', AttributeType: 'S' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
        DeletionProtectionEnabled: true,
      }),
    );
    // Keys only: whoever reads the index never sees the usage-plan key values on the items.
    expect(table.Properties.GlobalSecondaryIndexes).toEqual([
      {
        IndexName: 'byTenant',
        KeySchema: [
          { AttributeName: 'tenantId', KeyType: 'HASH' },
          { AttributeName: 'createdAt', KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'KEYS_ONLY' },
      },
    ]);
    expect(table.DeletionPolicy).toBe('Retain');
  });

  test('there are exactly three tables: jobs, API keys and live connections', () => {
    // About the app: no construct but these two makes a table.
    const paths = Object.values(app.findResources('AWS::DynamoDB::Table'))
      .map((table) => table.Metadata['aws:cdk:path'])
      .sort();
    expect(paths).toEqual([
      'Longhaul/JobStore/ApiKeyTable/Resource',
      'Longhaul/JobStore/JobTable/Resource',
      'Longhaul/LiveProgress/ConnectionTable/Resource',
    ]);
  });
});

/** Each provider's jobs queue, by its path under `stackId`; the first provider's keeps the path of the one queue there was. */
const providerQueues = (stackId: string): [name: string, path: string][] =>
  PROVIDER_NAMES.map((provider) => [
    `jobs queue of ${provider}`,
    `${stackId}/JobQueue/Queue${providerIdSuffix(provider)}/Resource`,
  ]);
/** The queues dispatch consumes: each provider's jobs queue and the hand-off queue. */
const dispatchedQueues = (stackId: string): [name: string, path: string][] => [
  ...providerQueues(stackId),
  ['hand-off queue', `${stackId}/JobQueue/HandOffQueue/Resource`],
];

describe('job queue', () => {
  test('the first provider keeps the path of the one jobs queue there was, so its messages survive the upgrade', () => {
    expect(providerQueues('Longhaul')).toContainEqual([
      `jobs queue of ${LEGACY_PROVIDER}`,
      'Longhaul/JobQueue/Queue/Resource',
    ]);
  });

  test.each(dispatchedQueues('Test'))(
    'the %s redrives to the one dead-letter queue after the receives it is given, with the visibility it is given',
    (_name, path) => {
      const dlq = logicalIdAt(template, 'AWS::SQS::Queue', 'Test/JobQueue/DeadLetterQueue/Resource');
      const queue = logicalIdAt(template, 'AWS::SQS::Queue', path);
      expect(template.toJSON().Resources[queue].Properties).toEqual({
        RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [dlq, 'Arn'] }, maxReceiveCount: MAX_RECEIVES },
        VisibilityTimeout: VISIBILITY_SECONDS,
        MessageRetentionPeriod: 14 * 24 * 3600,
        SqsManagedSseEnabled: true,
      });
    },
  );

  test.each(dispatchedQueues('Longhaul'))(
    'in the app, the %s redrives after 5 receives, with visibility six times the dispatch timeout',
    (_name, path) => {
      // About the app: the stack gives the queues these from the settings.
      const queue = logicalIdAt(app, 'AWS::SQS::Queue', path);
      expect(queueVisibilityTimeoutSeconds(defaultSettings)).toBe(6 * defaultSettings.dispatchTimeoutSeconds);
      expect(app.toJSON().Resources[queue].Properties).toMatchObject({
        RedrivePolicy: { maxReceiveCount: 5 },
        VisibilityTimeout: 180,
      });
    },
  );

  /** Which services may do what to the queue at `path` in the app, by the functions' roles. */
  const servicesActingOn = (path: string) => {
    const lane = logicalIdAt(app, 'AWS::SQS::Queue', path);
    const resources = app.toJSON().Resources as Record<string, any>;
    const serviceOfRole = new Map(
      Object.values(resources)
        .filter((resource) => resource.Type === 'AWS::Lambda::Function')
        .map((fn) => [
          fn.Properties.Role['Fn::GetAtt'][0],
          fn.Properties.Environment.Variables.POWERTOOLS_SERVICE_NAME,
        ]),
    );
    const actionsOnLane = new Map<string, string[]>();
    for (const policy of Object.values(resources).filter(
      (resource) => resource.Type === 'AWS::IAM::Policy',
    )) {
      for (const statement of policy.Properties.PolicyDocument.Statement) {
        const targets = [statement.Resource].flat().map((target: unknown) => JSON.stringify(target));
        if (!targets.includes(JSON.stringify({ 'Fn::GetAtt': [lane, 'Arn'] }))) continue;
        for (const role of policy.Properties.Roles) {
          const service = serviceOfRole.get(role.Ref) ?? role.Ref;
          actionsOnLane.set(service, [...(actionsOnLane.get(service) ?? []), ...[statement.Action].flat()]);
        }
      }
    }
    return (action: string) =>
      [...actionsOnLane]
        .filter(([, actions]) => actions.includes(action))
        .map(([service]) => service)
        .sort();
  };

  // About the app: which of its functions are given the queues.
  // Whatever frees a slot hands it on: the steps, the reconciler, the api (an operator's resolve, a
  // search's query slot) and the dispatcher (its fallback when a granted job's start fails).
  test('only what frees or grants a slot may send to the hand-off queue, and only the dispatcher consumes it', () => {
    const who = servicesActingOn('Longhaul/JobQueue/HandOffQueue/Resource');
    expect(who('sqs:SendMessage')).toEqual(['api', 'dispatch', 'reconcile', 'workflow']);
    expect(who('sqs:ReceiveMessage')).toEqual(['dispatch']);
    expect(who('sqs:DeleteMessage')).toEqual(['dispatch']);
  });

  test.each(providerQueues('Longhaul'))(
    'the %s takes new jobs from the api, schedule firings and the workflow (chunk jobs), lost ones from the reconciler and waiting ones from the dispatcher, which alone consumes it',
    (_name, path) => {
      const who = servicesActingOn(path);
      expect(who('sqs:SendMessage')).toEqual(['api', 'dispatch', 'fire', 'reconcile', 'workflow']);
      expect(who('sqs:ReceiveMessage')).toEqual(['dispatch']);
      expect(who('sqs:DeleteMessage')).toEqual(['dispatch']);
    },
  );

  test('the dead-letter queue keeps messages 14 days, encrypted, and redrives nowhere', () => {
    const dlq = logicalIdAt(template, 'AWS::SQS::Queue', 'Test/JobQueue/DeadLetterQueue/Resource');
    const queue = template.toJSON().Resources[dlq];
    expect(queue.Properties).toEqual({ MessageRetentionPeriod: 1_209_600, SqsManagedSseEnabled: true });
  });

  test('the app has one queue per provider, the hand-off queue, the dead-letter queue and the schedule firings’ own', () => {
    // About the app: no construct but these and the schedules makes a queue.
    app.resourceCountIs('AWS::SQS::Queue', PROVIDER_NAMES.length + 3);
  });

  test.each<[name: string, path: string]>([
    ...providerQueues('Test'),
    ['HandOffQueue', 'Test/JobQueue/HandOffQueue/Resource'],
    ['DeadLetterQueue', 'Test/JobQueue/DeadLetterQueue/Resource'],
  ])('%s denies every request without TLS', (_name, path) => {
    expectDeniesPlainHttp('AWS::SQS::QueuePolicy', logicalIdAt(template, 'AWS::SQS::Queue', path));
  });

  /** The metrics of the SQS alarms of `of`, sorted. */
  const queueAlarms = (of: Template) =>
    Object.values(of.findResources('AWS::CloudWatch::Alarm'))
      .filter((alarm) => alarm.Properties.Namespace === 'AWS/SQS')
      .map((alarm) => alarm.Properties.MetricName)
      .sort();
  /** One on the age of the oldest message of each queue dispatch consumes, tested with the other alarms in observability.test.ts. */
  const oldestMessageAlarms = [...PROVIDER_NAMES, 'hand-off'].map(() => 'ApproximateAgeOfOldestMessage');

  test('an alarm fires on the first visible dead-letter message and notifies the alarm topic', () => {
    const dlq = logicalIdAt(template, 'AWS::SQS::Queue', 'Test/JobQueue/DeadLetterQueue/Resource');
    const topic = logicalIdAt(template, 'AWS::SNS::Topic', 'Test/Alarms/Topic/Resource');
    expect(queueAlarms(template)).toEqual([...oldestMessageAlarms, 'ApproximateNumberOfMessagesVisible']);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlq, 'QueueName'] } }],
      Statistic: 'Maximum',
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      Threshold: 1,
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
      AlarmActions: [{ Ref: topic }],
      OKActions: [{ Ref: topic }],
    });
  });

  test('the only other queue alarm of the app is on the schedule firings’ dead-letter queue', () => {
    // About the app; the schedule firings' alarm is tested in job-schedules.test.ts.
    expect(queueAlarms(app)).toEqual([
      ...oldestMessageAlarms,
      'ApproximateNumberOfMessagesVisible',
      'ApproximateNumberOfMessagesVisible',
    ]);
  });
});

describe('alarm topic', () => {
  test('is encrypted with a rotating customer-managed key CloudWatch may use', () => {
    const key = logicalIdAt(template, 'AWS::KMS::Key', 'Test/Alarms/Key/Resource');
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: { 'Fn::GetAtt': [key, 'Arn'] } });
    template.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
          }),
        ]),
      },
    });
  });

  test('accepts publishing only over TLS, and from CloudWatch only for alarms of this account', () => {
    const topic = logicalIdAt(template, 'AWS::SNS::Topic', 'Test/Alarms/Topic/Resource');
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: topic }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 'sns:Publish',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: 'sns:Publish',
            Condition: Match.objectLike({ StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } }),
          }),
        ]),
      },
    });
  });

  test('subscribes the alarm e-mail address when one is given', () => {
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
    });
  });

  test('the app subscribes the alarm e-mail address it is given', () => {
    // About the app: the stack hands its address to the alarm topic. Read from the stack built, not
    // synthesized: a synthesis of the whole app for one address would take seconds.
    const longhaul = new LonghaulStack(stackUnderTest().node.root as Construct, 'Longhaul', {
      settings: defaultSettings,
      alarmEmail: 'ops@example.com',
    });
    const subscriptions = longhaul.alarms.topic.node
      .findAll()
      .filter((child): child is CfnSubscription => child instanceof CfnSubscription);
    expect(subscriptions.map(({ protocol, endpoint }) => ({ protocol, endpoint }))).toEqual([
      { protocol: 'email', endpoint: 'ops@example.com' },
    ]);
  });
});

const ACCESS_LOG_BUCKET = 'Test/JobInputs/AccessLogBucket/Resource';

describe.each([
  ['input bucket', 'Test/JobInputs/InputBucket/Resource', 'input-bucket/'],
  ['output bucket', 'Test/JobOutputs/OutputBucket/Resource', 'output-bucket/'],
])('the %s', (_name, path, logPrefix) => {
  test('is private, encrypted, retained, has no CORS rule and logs access to the access-log bucket', () => {
    const id = logicalIdAt(template, 'AWS::S3::Bucket', path);
    const logBucket = logicalIdAt(template, 'AWS::S3::Bucket', ACCESS_LOG_BUCKET);
    const bucket = template.toJSON().Resources[id];
    expect(bucket.Properties).toEqual(
      expect.objectContaining({
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
        },
        OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
        LoggingConfiguration: { DestinationBucketName: { Ref: logBucket }, LogFilePrefix: logPrefix },
      }),
    );
    expect(bucket.Properties.CorsConfiguration).toBeUndefined();
    expect(bucket.DeletionPolicy).toBe('Retain');
    expect(bucket.UpdateReplacePolicy).toBe('Retain');
  });

  test('denies every request without TLS', () => {
    expectDeniesPlainHttp('AWS::S3::BucketPolicy', logicalIdAt(template, 'AWS::S3::Bucket', path));
  });

  test('has its access logs accepted from S3 by the access-log bucket’s policy', () => {
    const logBucket = logicalIdAt(template, 'AWS::S3::Bucket', ACCESS_LOG_BUCKET);
    const bucket = logicalIdAt(template, 'AWS::S3::Bucket', path);
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: logBucket },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'logging.s3.amazonaws.com' },
            Action: 's3:PutObject',
            Condition: Match.objectLike({
              ArnLike: { 'aws:SourceArn': { 'Fn::GetAtt': [bucket, 'Arn'] } },
            }),
          }),
        ]),
      },
    });
  });
});

test('the access-log bucket denies every request without TLS', () => {
  expectDeniesPlainHttp('AWS::S3::BucketPolicy', logicalIdAt(template, 'AWS::S3::Bucket', ACCESS_LOG_BUCKET));
});

describe('buckets in the app', () => {
  // About the app: the stack derives each expiry from the settings.
  const lifecycleRules = (path: string) =>
    app.toJSON().Resources[logicalIdAt(app, 'AWS::S3::Bucket', path)].Properties.LifecycleConfiguration.Rules;
  const abortStaleUploads = {
    Id: 'abort-incomplete-uploads',
    Status: 'Enabled',
    AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
  };

  test('inputs expire after the job retention plus the longest job and a week, and stale multipart uploads are aborted', () => {
    // 30 days of job retention + 1 day (a 10-minute job timeout, rounded up) + 7 days of margin.
    expect(lifecycleRules('Longhaul/JobInputs/InputBucket/Resource')).toEqual([
      { Id: 'expire-inputs', Status: 'Enabled', ExpirationInDays: 38 },
      abortStaleUploads,
    ]);
  });

  test('outputs expire a week after their job does, and stale multipart uploads are aborted', () => {
    expect(lifecycleRules('Longhaul/JobOutputs/OutputBucket/Resource')).toEqual([
      { Id: 'expire-outputs', Status: 'Enabled', ExpirationInDays: defaultSettings.jobRetentionDays + 7 },
      abortStaleUploads,
    ]);
  });

  test('there are exactly three buckets: inputs, outputs and their access logs', () => {
    app.resourceCountIs('AWS::S3::Bucket', 3);
  });
});

describe('secrets', () => {
  test.each([
    ['longhaul-http', 'Test/Secrets/ProviderSecret/Resource'],
    ['replicate', 'Test/Secrets/ProviderSecretReplicate/Resource'],
    ['deepgram', 'Test/Secrets/ProviderSecretDeepgram/Resource'],
  ])(
    'the %s secret starts as JSON with an empty API key and a generated webhook key, and is kept',
    (provider, path) => {
      const id = logicalIdAt(template, 'AWS::SecretsManager::Secret', path);
      const secret = template.toJSON().Resources[id];
      expect(secret.Properties.Description).toContain(
        `Longhaul provider ${PROVIDERS[provider as ProviderName].title}`,
      );
      expect(secret.Properties.GenerateSecretString).toEqual({
        SecretStringTemplate: JSON.stringify({ apiKey: '' }),
        GenerateStringKey: 'webhookSecret',
        ExcludePunctuation: true,
        PasswordLength: 48,
      });
      expect(secret.Properties.SecretString).toBeUndefined();
      expect(secret.DeletionPolicy).toBe('Retain');
      expect(secret.UpdateReplacePolicy).toBe('Retain');
    },
  );

  test('the webhook signing secret is a generated 48-character string without punctuation', () => {
    const id = logicalIdAt(
      template,
      'AWS::SecretsManager::Secret',
      'Test/Secrets/WebhookSigningSecret/Resource',
    );
    const secret = template.toJSON().Resources[id];
    expect(secret.Properties.GenerateSecretString).toEqual({ ExcludePunctuation: true, PasswordLength: 48 });
    expect(secret.DeletionPolicy).toBe('Retain');
  });

  test('there are exactly these secrets, one per provider and the webhook signing key, and none rotates by itself', () => {
    // About the app: no construct but these makes a secret or rotates one.
    app.resourceCountIs('AWS::SecretsManager::Secret', PROVIDER_NAMES.length + 1);
    app.resourceCountIs('AWS::SecretsManager::RotationSchedule', 0);
  });
});

describe('stack outputs', () => {
  test.each([
    ['JobTableName', 'Longhaul/JobStore/JobTable/Resource', 'AWS::DynamoDB::Table'],
    ['ApiKeyTableName', 'Longhaul/JobStore/ApiKeyTable/Resource', 'AWS::DynamoDB::Table'],
    ['JobQueueUrl', 'Longhaul/JobQueue/Queue/Resource', 'AWS::SQS::Queue'],
    ['HandOffQueueUrl', 'Longhaul/JobQueue/HandOffQueue/Resource', 'AWS::SQS::Queue'],
    ['DeadLetterQueueUrl', 'Longhaul/JobQueue/DeadLetterQueue/Resource', 'AWS::SQS::Queue'],
    ['InputBucketName', 'Longhaul/JobInputs/InputBucket/Resource', 'AWS::S3::Bucket'],
    ['OutputBucketName', 'Longhaul/JobOutputs/OutputBucket/Resource', 'AWS::S3::Bucket'],
    ['StateMachineArn', 'Longhaul/Workflow/StateMachine/Resource', 'AWS::StepFunctions::StateMachine'],
    ['ProviderSecretArn', 'Longhaul/Secrets/ProviderSecret/Resource', 'AWS::SecretsManager::Secret'],
    [
      'ProviderSecretArnReplicate',
      'Longhaul/Secrets/ProviderSecretReplicate/Resource',
      'AWS::SecretsManager::Secret',
    ],
    [
      'ProviderSecretArnDeepgram',
      'Longhaul/Secrets/ProviderSecretDeepgram/Resource',
      'AWS::SecretsManager::Secret',
    ],
    ['WebhookSecretArn', 'Longhaul/Secrets/WebhookSigningSecret/Resource', 'AWS::SecretsManager::Secret'],
    ['AlarmTopicArn', 'Longhaul/Alarms/Topic/Resource', 'AWS::SNS::Topic'],
  ])('%s refers to its resource', (output, path, type) => {
    // About the app: its outputs name the resources its constructs made.
    app.hasOutput(output, { Value: { Ref: logicalIdAt(app, type, path) } });
  });
});
