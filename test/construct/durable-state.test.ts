import { Match, type Template } from 'aws-cdk-lib/assertions';
import { apiKeyTable, jobTable } from '../../config/layout';
import { LEGACY_PROVIDER, PROVIDER_NAMES, PROVIDERS, type ProviderName } from '../../config/providers';
import { defaultSettings, queueVisibilityTimeoutSeconds } from '../../config/settings';
import { providerIdSuffix } from '../../lib/provider-ids';
import { logicalIdAt, longhaulTemplate, SYNTH_TIMEOUT_MS } from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

let template: Template;

beforeAll(() => {
  template = longhaulTemplate({}, { alarmEmail: 'ops@example.com' });
});

describe('job table', () => {
  const path = 'Longhaul/JobStore/JobTable/Resource';

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
    const id = logicalIdAt(template, 'AWS::DynamoDB::Table', 'Longhaul/JobStore/ApiKeyTable/Resource');
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
    const paths = Object.values(template.findResources('AWS::DynamoDB::Table'))
      .map((table) => table.Metadata['aws:cdk:path'])
      .sort();
    expect(paths).toEqual([
      'Longhaul/JobStore/ApiKeyTable/Resource',
      'Longhaul/JobStore/JobTable/Resource',
      'Longhaul/LiveProgress/ConnectionTable/Resource',
    ]);
  });
});

/** Each provider's jobs queue; the first provider's keeps the path of the one queue there was. */
const providerQueues: [name: string, path: string][] = PROVIDER_NAMES.map((provider) => [
  `jobs queue of ${provider}`,
  `Longhaul/JobQueue/Queue${providerIdSuffix(provider)}/Resource`,
]);

describe('job queue', () => {
  test('the first provider keeps the path of the one jobs queue there was, so its messages survive the upgrade', () => {
    expect(providerQueues).toContainEqual([
      `jobs queue of ${LEGACY_PROVIDER}`,
      'Longhaul/JobQueue/Queue/Resource',
    ]);
  });

  test.each<[name: string, path: string]>([
    ...providerQueues,
    ['hand-off queue', 'Longhaul/JobQueue/HandOffQueue/Resource'],
  ])(
    'the %s redrives to the one dead-letter queue after 5 receives, with visibility six times the dispatch timeout',
    (_name, path) => {
      const dlq = logicalIdAt(template, 'AWS::SQS::Queue', 'Longhaul/JobQueue/DeadLetterQueue/Resource');
      const queue = logicalIdAt(template, 'AWS::SQS::Queue', path);
      expect(queueVisibilityTimeoutSeconds(defaultSettings)).toBe(6 * defaultSettings.dispatchTimeoutSeconds);
      expect(template.toJSON().Resources[queue].Properties).toEqual({
        RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [dlq, 'Arn'] }, maxReceiveCount: 5 },
        VisibilityTimeout: 180,
        MessageRetentionPeriod: 14 * 24 * 3600,
        SqsManagedSseEnabled: true,
      });
    },
  );

  /** Which services may do what to the queue at `path`, by the functions' roles. */
  const servicesActingOn = (path: string) => {
    const lane = logicalIdAt(template, 'AWS::SQS::Queue', path);
    const resources = template.toJSON().Resources as Record<string, any>;
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

  test('only the workflow steps and the reconciler may send to the hand-off queue, and only the dispatcher consumes it', () => {
    const who = servicesActingOn('Longhaul/JobQueue/HandOffQueue/Resource');
    expect(who('sqs:SendMessage')).toEqual(['reconcile', 'workflow']);
    expect(who('sqs:ReceiveMessage')).toEqual(['dispatch']);
    expect(who('sqs:DeleteMessage')).toEqual(['dispatch']);
  });

  test.each(providerQueues)(
    'the %s takes new jobs from the api, schedule firings and the workflow (chunk jobs), lost ones from the reconciler and waiting ones from the dispatcher, which alone consumes it',
    (_name, path) => {
      const who = servicesActingOn(path);
      expect(who('sqs:SendMessage')).toEqual(['api', 'dispatch', 'fire', 'reconcile', 'workflow']);
      expect(who('sqs:ReceiveMessage')).toEqual(['dispatch']);
      expect(who('sqs:DeleteMessage')).toEqual(['dispatch']);
    },
  );

  test('the dead-letter queue keeps messages 14 days, encrypted, and redrives nowhere', () => {
    const dlq = logicalIdAt(template, 'AWS::SQS::Queue', 'Longhaul/JobQueue/DeadLetterQueue/Resource');
    const queue = template.toJSON().Resources[dlq];
    expect(queue.Properties).toEqual({ MessageRetentionPeriod: 1_209_600, SqsManagedSseEnabled: true });
    // One queue per provider, the hand-off queue, this dead-letter queue and the schedule firings' own.
    template.resourceCountIs('AWS::SQS::Queue', PROVIDER_NAMES.length + 3);
  });

  test.each<[name: string, path: string]>([
    ...providerQueues,
    ['HandOffQueue', 'Longhaul/JobQueue/HandOffQueue/Resource'],
    ['DeadLetterQueue', 'Longhaul/JobQueue/DeadLetterQueue/Resource'],
  ])('%s denies every request without TLS', (_name, path) => {
    const queue = logicalIdAt(template, 'AWS::SQS::Queue', path);
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: queue }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Principal: { AWS: '*' },
            Action: 'sqs:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  test('an alarm fires on the first visible dead-letter message and notifies the alarm topic', () => {
    const dlq = logicalIdAt(template, 'AWS::SQS::Queue', 'Longhaul/JobQueue/DeadLetterQueue/Resource');
    const topic = logicalIdAt(template, 'AWS::SNS::Topic', 'Longhaul/Alarms/Topic/Resource');
    const queueAlarms = Object.values(template.findResources('AWS::CloudWatch::Alarm'))
      .filter((alarm) => alarm.Properties.Namespace === 'AWS/SQS')
      .map((alarm) => alarm.Properties.MetricName)
      .sort();
    // The others, on the age of the oldest message of each queue, are tested with the other alarms in observability.test.ts.
    expect(queueAlarms).toEqual([
      ...[...PROVIDER_NAMES, 'hand-off'].map(() => 'ApproximateAgeOfOldestMessage'),
      // This dead-letter queue's and the schedule firings' (tested in job-schedules.test.ts).
      'ApproximateNumberOfMessagesVisible',
      'ApproximateNumberOfMessagesVisible',
    ]);
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
});

describe('alarm topic', () => {
  test('is encrypted with a rotating customer-managed key CloudWatch may use', () => {
    const key = logicalIdAt(template, 'AWS::KMS::Key', 'Longhaul/Alarms/Key/Resource');
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
    const topic = logicalIdAt(template, 'AWS::SNS::Topic', 'Longhaul/Alarms/Topic/Resource');
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
});

describe('input bucket', () => {
  const path = 'Longhaul/JobInputs/InputBucket/Resource';

  test('is private, encrypted, retained and logs access to the access-log bucket', () => {
    const id = logicalIdAt(template, 'AWS::S3::Bucket', path);
    const logBucket = logicalIdAt(template, 'AWS::S3::Bucket', 'Longhaul/JobInputs/AccessLogBucket/Resource');
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
        LoggingConfiguration: { DestinationBucketName: { Ref: logBucket }, LogFilePrefix: 'input-bucket/' },
      }),
    );
    expect(bucket.DeletionPolicy).toBe('Retain');
  });

  test('expires inputs after the job retention plus the longest job and a week, and aborts stale multipart uploads', () => {
    // 30 days of job retention + 1 day (a 10-minute job timeout, rounded up) + 7 days of margin.
    const expected = 38;
    template.hasResourceProperties('AWS::S3::Bucket', {
      LifecycleConfiguration: {
        Rules: [
          { Id: 'expire-inputs', Status: 'Enabled', ExpirationInDays: expected },
          {
            Id: 'abort-incomplete-uploads',
            Status: 'Enabled',
            AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
          },
        ],
      },
    });
  });

  test.each([
    ['InputBucket', 'Longhaul/JobInputs/InputBucket/Resource'],
    ['AccessLogBucket', 'Longhaul/JobInputs/AccessLogBucket/Resource'],
  ])('%s denies every request without TLS', (_name, bucketPath) => {
    const bucket = logicalIdAt(template, 'AWS::S3::Bucket', bucketPath);
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucket },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Principal: { AWS: '*' },
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  test('the access-log bucket accepts logs from S3 through its bucket policy, for the input bucket only', () => {
    const logBucket = logicalIdAt(template, 'AWS::S3::Bucket', 'Longhaul/JobInputs/AccessLogBucket/Resource');
    const inputBucket = logicalIdAt(template, 'AWS::S3::Bucket', path);
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: logBucket },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'logging.s3.amazonaws.com' },
            Action: 's3:PutObject',
            Condition: Match.objectLike({
              ArnLike: { 'aws:SourceArn': { 'Fn::GetAtt': [inputBucket, 'Arn'] } },
            }),
          }),
        ]),
      },
    });
  });
});

describe('output bucket', () => {
  const path = 'Longhaul/JobOutputs/OutputBucket/Resource';

  test('is private, encrypted, retained and logs access to the access-log bucket', () => {
    const id = logicalIdAt(template, 'AWS::S3::Bucket', path);
    const logBucket = logicalIdAt(template, 'AWS::S3::Bucket', 'Longhaul/JobInputs/AccessLogBucket/Resource');
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
        LoggingConfiguration: { DestinationBucketName: { Ref: logBucket }, LogFilePrefix: 'output-bucket/' },
      }),
    );
    expect(bucket.Properties.CorsConfiguration).toBeUndefined();
    expect(bucket.DeletionPolicy).toBe('Retain');
    expect(bucket.UpdateReplacePolicy).toBe('Retain');
  });

  test('expires outputs a week after their job does, and aborts stale multipart uploads', () => {
    const id = logicalIdAt(template, 'AWS::S3::Bucket', path);
    expect(template.toJSON().Resources[id].Properties.LifecycleConfiguration).toEqual({
      Rules: [
        { Id: 'expire-outputs', Status: 'Enabled', ExpirationInDays: defaultSettings.jobRetentionDays + 7 },
        {
          Id: 'abort-incomplete-uploads',
          Status: 'Enabled',
          AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
        },
      ],
    });
  });

  test('denies every request without TLS', () => {
    const bucket = logicalIdAt(template, 'AWS::S3::Bucket', path);
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucket },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Principal: { AWS: '*' },
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  test('the access-log bucket accepts its logs from S3 too', () => {
    const logBucket = logicalIdAt(template, 'AWS::S3::Bucket', 'Longhaul/JobInputs/AccessLogBucket/Resource');
    const outputBucket = logicalIdAt(template, 'AWS::S3::Bucket', path);
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: logBucket },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'logging.s3.amazonaws.com' },
            Action: 's3:PutObject',
            Condition: Match.objectLike({
              ArnLike: { 'aws:SourceArn': { 'Fn::GetAtt': [outputBucket, 'Arn'] } },
            }),
          }),
        ]),
      },
    });
  });

  test('there are exactly three buckets: inputs, outputs and their access logs', () => {
    template.resourceCountIs('AWS::S3::Bucket', 3);
  });
});

describe('secrets', () => {
  test.each([
    ['longhaul-http', 'Longhaul/Secrets/ProviderSecret/Resource'],
    ['replicate', 'Longhaul/Secrets/ProviderSecretReplicate/Resource'],
    ['deepgram', 'Longhaul/Secrets/ProviderSecretDeepgram/Resource'],
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
      'Longhaul/Secrets/WebhookSigningSecret/Resource',
    );
    const secret = template.toJSON().Resources[id];
    expect(secret.Properties.GenerateSecretString).toEqual({ ExcludePunctuation: true, PasswordLength: 48 });
    expect(secret.DeletionPolicy).toBe('Retain');
  });

  test('there are exactly these secrets, one per provider and the webhook signing key, and none rotates by itself', () => {
    template.resourceCountIs('AWS::SecretsManager::Secret', PROVIDER_NAMES.length + 1);
    template.resourceCountIs('AWS::SecretsManager::RotationSchedule', 0);
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
    template.hasOutput(output, { Value: { Ref: logicalIdAt(template, type, path) } });
  });
});
