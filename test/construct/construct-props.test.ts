import { Duration } from 'aws-cdk-lib';
import { Table } from 'aws-cdk-lib/aws-dynamodb';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { type IQueue, Queue } from 'aws-cdk-lib/aws-sqs';
import { DefinitionBody, Pass, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { PROVIDER_NAMES, type ProviderName } from '../../config/providers';
import { defaultSettings } from '../../config/settings';
import { Alarms } from '../../lib/constructs/alarms';
import { HttpApi, type HttpApiProps } from '../../lib/constructs/http-api';
import { JobInputs } from '../../lib/constructs/job-inputs';
import { JobOutputs } from '../../lib/constructs/job-outputs';
import { JobQueue } from '../../lib/constructs/job-queue';
import { LiveProgress, type LiveProgressProps } from '../../lib/constructs/live-progress';
import { Reconciler } from '../../lib/constructs/reconciler';
import { stackUnderTest } from './longhaul-app';

// Bad props fail before anything is bundled; nothing is bundled when they pass either.
const stack = () => stackUnderTest();

describe('Alarms', () => {
  test('rejects an alarm e-mail that is no address', () => {
    expect(() => new Alarms(stack(), 'Alarms', { email: 'ops' })).toThrow(
      'Alarms Test/Alarms: email must be an e-mail address, got "ops"',
    );
  });
});

describe('JobQueue', () => {
  const create =
    (
      maxReceiveCount: number,
      visibilityTimeout = Duration.minutes(3),
      oldestMessageAlarmAge = Duration.minutes(15),
    ) =>
    () => {
      const scope = stack();
      new JobQueue(scope, 'JobQueue', {
        maxReceiveCount,
        visibilityTimeout,
        oldestMessageAlarmAge,
        alarms: new Alarms(scope, 'Alarms'),
      });
    };

  test('rejects fewer than 5 receives before the dead-letter queue', () => {
    expect(create(3)).toThrow(
      'JobQueue Test/JobQueue: maxReceiveCount must be an integer from 5 to 1000, got 3',
    );
  });

  test('rejects a visibility timeout beyond SQS’s 12 hours', () => {
    expect(create(5, Duration.hours(13))).toThrow(
      'JobQueue Test/JobQueue: visibilityTimeout must be a whole number of seconds from 0 to 43200, got 46800',
    );
  });

  test('rejects an oldest-message alarm age a message cannot reach, or one too short to mean anything', () => {
    expect(create(5, Duration.minutes(3), Duration.days(15))).toThrow(
      'JobQueue Test/JobQueue: oldestMessageAlarmAge must be a whole number of seconds from 60 to 1209600, got 1296000',
    );
    expect(create(5, Duration.minutes(3), Duration.seconds(30))).toThrow(
      'JobQueue Test/JobQueue: oldestMessageAlarmAge must be a whole number of seconds from 60 to 1209600, got 30',
    );
  });
});

describe('JobInputs', () => {
  test('rejects inputs that would expire at once', () => {
    expect(() => new JobInputs(stack(), 'JobInputs', { expirationDays: 0 })).toThrow(
      'JobInputs Test/JobInputs: expirationDays must be a positive integer, got 0',
    );
  });
});

describe('JobOutputs', () => {
  test('rejects outputs that would expire at once', () => {
    const scope = stack();
    const create = () =>
      new JobOutputs(scope, 'JobOutputs', {
        expirationDays: 0.5,
        accessLogBucket: Bucket.fromBucketName(scope, 'Logs', 'logs'),
      });
    expect(create).toThrow('JobOutputs Test/JobOutputs: expirationDays must be a positive integer, got 0.5');
  });
});

/** One queue per provider, as the stack gives them. */
const jobQueues = (scope: Construct) =>
  Object.fromEntries(
    PROVIDER_NAMES.map((provider) => [
      provider,
      Queue.fromQueueArn(scope, `Queue-${provider}`, `arn:aws:sqs:eu-west-1:111111111111:jobs-${provider}`),
    ]),
  ) as Record<ProviderName, IQueue>;

describe('HttpApi', () => {
  const create = (overrides: Partial<HttpApiProps>) => () => {
    const scope = stack();
    return new HttpApi(scope, 'Api', {
      settings: defaultSettings,
      alarms: new Alarms(scope, 'Alarms'),
      jobTable: Table.fromTableName(scope, 'Jobs', 'jobs'),
      apiKeyTable: Table.fromTableName(scope, 'Keys', 'keys'),
      jobQueues: jobQueues(scope),
      deadLetterQueue: Queue.fromQueueArn(
        scope,
        'DeadLetters',
        'arn:aws:sqs:eu-west-1:111111111111:jobs-dlq',
      ),
      redriveQueue: Queue.fromQueueArn(scope, 'Queue', 'arn:aws:sqs:eu-west-1:111111111111:jobs'),
      inputBucket: Bucket.fromBucketName(scope, 'Inputs', 'inputs'),
      outputBucket: Bucket.fromBucketName(scope, 'Outputs', 'outputs'),
      providerSecrets: {
        'longhaul-http': Secret.fromSecretNameV2(scope, 'Provider', 'provider'),
        replicate: Secret.fromSecretNameV2(scope, 'ProviderReplicate', 'provider-replicate'),
        deepgram: Secret.fromSecretNameV2(scope, 'ProviderDeepgram', 'provider-deepgram'),
        bedrock: Secret.fromSecretNameV2(scope, 'ProviderBedrock', 'provider-bedrock'),
      },
      ...overrides,
    });
  };

  test('rejects a stage name API Gateway would refuse', () => {
    expect(create({ stageName: 'v1/prod' })).toThrow(
      'HttpApi Test/Api: stageName must contain only letters, digits and underscores, got "v1/prod"',
    );
  });

  test('rejects stage limits below one tenant’s limits', () => {
    expect(create({ stageRateLimit: 10 })).toThrow(
      "HttpApi Test/Api: stage limits (10/s, burst 1000) must be at least one tenant's limits (20/s, burst 40)",
    );
  });

  test('rejects an API without routes', () => {
    expect(create({ routes: [] })).toThrow('HttpApi Test/Api: routes must not be empty');
  });

  test('rejects a route listed twice', () => {
    const route = { method: 'GET', path: '/healthz', auth: 'none' } as const;
    expect(create({ routes: [route, route] })).toThrow(
      'HttpApi Test/Api: route GET /healthz is listed twice',
    );
  });

  test('gives the URL of a route it serves, and refuses one it does not', () => {
    const api = create({ routes: [{ method: 'GET', path: '/healthz', auth: 'none' }] })();
    expect(api.routeUrl('GET /healthz')).toBe(`${api.url}/healthz`);
    expect(() => api.routeUrl('POST /v1/provider/events')).toThrow(
      'HttpApi Test/Api: route POST /v1/provider/events is not served',
    );
  });
});

describe('LiveProgress', () => {
  const create = (overrides: Partial<LiveProgressProps>) => () => {
    const scope = stack();
    return new LiveProgress(scope, 'Live', {
      settings: defaultSettings,
      jobTable: Table.fromTableName(scope, 'Jobs', 'jobs'),
      apiKeyTable: Table.fromTableName(scope, 'Keys', 'keys'),
      ...overrides,
    });
  };

  test('rejects a stage name API Gateway would refuse', () => {
    expect(create({ stageName: 'live/v1' })).toThrow(
      'LiveProgress Test/Live: stageName must contain only letters, digits and underscores, got "live/v1"',
    );
  });

  test('rejects throttling that would refuse every client', () => {
    expect(create({ rateLimit: 0 })).toThrow(
      'LiveProgress Test/Live: rateLimit must be positive and burstLimit a positive integer, got 0 and 200',
    );
  });
});

describe('Reconciler', () => {
  const create = (reconcileSchedule: string) => () => {
    const scope = stack();
    new Reconciler(scope, 'Reconciler', {
      settings: { ...defaultSettings, reconcileSchedule },
      jobTable: Table.fromTableName(scope, 'Jobs', 'jobs'),
      jobQueues: jobQueues(scope),
      handOffQueue: Queue.fromQueueArn(scope, 'HandOff', 'arn:aws:sqs:eu-west-1:111111111111:hand-off'),
      stateMachine: new StateMachine(scope, 'Machine', {
        definitionBody: DefinitionBody.fromChainable(new Pass(scope, 'Pass')),
      }),
      providerSecrets: {
        'longhaul-http': Secret.fromSecretNameV2(scope, 'Provider', 'provider'),
        replicate: Secret.fromSecretNameV2(scope, 'ProviderReplicate', 'provider-replicate'),
        deepgram: Secret.fromSecretNameV2(scope, 'ProviderDeepgram', 'provider-deepgram'),
        bedrock: Secret.fromSecretNameV2(scope, 'ProviderBedrock', 'provider-bedrock'),
      },
      alarms: new Alarms(scope, 'Alarms'),
    });
  };

  test.each(['rate(1 minutes)', 'rate(2 minute)', 'rate(0 minutes)'])(
    'rejects %s, which Scheduler would refuse',
    (schedule) => {
      expect(create(schedule)).toThrow(
        `Reconciler Test/Reconciler: schedule must be rate(1 minute), rate(N minutes), rate(1 hour) or rate(N hours) with N > 1, got "${schedule}"`,
      );
    },
  );

  test('rejects passes further apart than its alarms can see', () => {
    expect(create('rate(9 hours)')).toThrow(
      'Reconciler Test/Reconciler: schedule must run at least every 8 hours (its alarms look at 3 consecutive passes, and CloudWatch looks back at most one day), got rate(9 hours)',
    );
  });
});
