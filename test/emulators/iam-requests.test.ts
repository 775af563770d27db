import { authorizations, type RequestScope, type SignedRequest } from '../../local/iam-requests';

const scope: RequestScope = {
  region: 'us-east-1',
  accountId: '000000000000',
  webSocket: { apiId: 'local', stage: 'live' },
};

const signed = (service: string) => ({
  authorization: `AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/${service}/aws4_request, SignedHeaders=host, Signature=0`,
});

const json = (service: string, target: string, body: unknown): SignedRequest => ({
  method: 'POST',
  path: '/',
  query: {},
  headers: { ...signed(service), 'x-amz-target': target },
  body: JSON.stringify(body),
});

const rest = (
  service: string,
  method: string,
  path: string,
  query: SignedRequest['query'] = {},
): SignedRequest => ({
  method,
  path,
  query,
  headers: signed(service),
});

describe('DynamoDB', () => {
  it('names the table, or the index a query reads', () => {
    expect(
      authorizations(json('dynamodb', 'DynamoDB_20120810.PutItem', { TableName: 'jobs' }), scope),
    ).toEqual([
      { action: 'dynamodb:PutItem', resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/jobs' },
    ]);
    expect(
      authorizations(
        json('dynamodb', 'DynamoDB_20120810.Query', { TableName: 'jobs', IndexName: 'active' }),
        scope,
      ),
    ).toEqual([
      {
        action: 'dynamodb:Query',
        resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/jobs/index/active',
      },
    ]);
  });

  it('checks every table of a batch, and each transaction item as its single operation', () => {
    expect(
      authorizations(
        json('dynamodb', 'DynamoDB_20120810.BatchGetItem', { RequestItems: { a: {}, b: {} } }),
        scope,
      ),
    ).toEqual([
      { action: 'dynamodb:BatchGetItem', resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/a' },
      { action: 'dynamodb:BatchGetItem', resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/b' },
    ]);
    expect(
      authorizations(
        json('dynamodb', 'DynamoDB_20120810.TransactWriteItems', {
          TransactItems: [{ Put: { TableName: 'a' } }, { ConditionCheck: { TableName: 'b' } }],
        }),
        scope,
      ),
    ).toEqual([
      { action: 'dynamodb:PutItem', resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/a' },
      { action: 'dynamodb:ConditionCheckItem', resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/b' },
    ]);
  });
});

describe('SQS', () => {
  it('names the queue of the URL, and authorizes a batch as its single operation', () => {
    const url = 'http://127.0.0.1:4566/000000000000/jobs';
    expect(authorizations(json('sqs', 'AmazonSQS.SendMessageBatch', { QueueUrl: url }), scope)).toEqual([
      { action: 'sqs:SendMessage', resource: 'arn:aws:sqs:us-east-1:000000000000:jobs' },
    ]);
    expect(authorizations(json('sqs', 'AmazonSQS.GetQueueUrl', { QueueName: 'jobs' }), scope)).toEqual([
      { action: 'sqs:GetQueueUrl', resource: 'arn:aws:sqs:us-east-1:000000000000:jobs' },
    ]);
  });

  it('needs the consumer rights on the source of a message move, and the producer right on its destination', () => {
    const dlq = 'arn:aws:sqs:us-east-1:000000000000:dlq';
    const jobs = 'arn:aws:sqs:us-east-1:000000000000:jobs';
    expect(
      authorizations(
        json('sqs', 'AmazonSQS.StartMessageMoveTask', { SourceArn: dlq, DestinationArn: jobs }),
        scope,
      ),
    ).toEqual([
      { action: 'sqs:StartMessageMoveTask', resource: dlq },
      { action: 'sqs:ReceiveMessage', resource: dlq },
      { action: 'sqs:DeleteMessage', resource: dlq },
      { action: 'sqs:GetQueueAttributes', resource: dlq },
      { action: 'sqs:SendMessage', resource: jobs },
    ]);
  });
});

describe('S3', () => {
  it('reads objects with GetObject, HEAD included, ignoring the SDK’s x-id hint', () => {
    expect(authorizations(rest('s3', 'HEAD', '/inputs/inputs/dev/up_1'), scope)).toEqual([
      { action: 's3:GetObject', resource: 'arn:aws:s3:::inputs/inputs/dev/up_1' },
    ]);
    expect(authorizations(rest('s3', 'PUT', '/outputs/a%20b.png', { 'x-id': 'PutObject' }), scope)).toEqual([
      { action: 's3:PutObject', resource: 'arn:aws:s3:::outputs/a b.png' },
    ]);
  });

  it('lists a bucket with ListBucket on the bucket itself', () => {
    expect(
      authorizations(rest('s3', 'GET', '/inputs', { 'list-type': '2', prefix: 'x', 'max-keys': '5' }), scope),
    ).toEqual([{ action: 's3:ListBucket', resource: 'arn:aws:s3:::inputs' }]);
  });

  it('reads the source of a copy with the caller’s rights', () => {
    const copy = {
      ...rest('s3', 'PUT', '/outputs/b'),
      headers: { ...signed('s3'), 'x-amz-copy-source': '/inputs/a' },
    };
    expect(authorizations(copy, scope)).toEqual([
      { action: 's3:PutObject', resource: 'arn:aws:s3:::outputs/b' },
      { action: 's3:GetObject', resource: 'arn:aws:s3:::inputs/a' },
    ]);
  });
});

describe('Step Functions, Secrets Manager and the WebSocket management API', () => {
  it('names the state machine, the execution, or nothing for task tokens', () => {
    const machine = 'arn:aws:states:us-east-1:000000000000:stateMachine:jobs';
    const execution = 'arn:aws:states:us-east-1:000000000000:execution:jobs:job_1';
    expect(
      authorizations(json('states', 'AWSStepFunctions.StartExecution', { stateMachineArn: machine }), scope),
    ).toEqual([{ action: 'states:StartExecution', resource: machine }]);
    expect(
      authorizations(
        json('states', 'AWSStepFunctions.DescribeExecution', { executionArn: execution }),
        scope,
      ),
    ).toEqual([{ action: 'states:DescribeExecution', resource: execution }]);
    expect(
      authorizations(json('states', 'AWSStepFunctions.SendTaskSuccess', { taskToken: 't' }), scope),
    ).toEqual([{ action: 'states:SendTaskSuccess', resource: '*' }]);
  });

  it('reads a secret by ARN, and refuses to guess the ARN of a name', () => {
    const arn = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:longhaul/provider-AbCdEf';
    expect(
      authorizations(json('secretsmanager', 'secretsmanager.GetSecretValue', { SecretId: arn }), scope),
    ).toEqual([{ action: 'secretsmanager:GetSecretValue', resource: arn }]);
    expect(
      authorizations(
        json('secretsmanager', 'secretsmanager.GetSecretValue', { SecretId: 'longhaul/provider' }),
        scope,
      ),
    ).toBeUndefined();
  });

  it('posts to a connection as ManageConnections on the template’s stage', () => {
    expect(authorizations(rest('execute-api', 'POST', '/local/@connections/abc%3D'), scope)).toEqual([
      {
        action: 'execute-api:ManageConnections',
        resource: 'arn:aws:execute-api:us-east-1:000000000000:local/live/POST/@connections/abc=',
      },
    ]);
  });
});

it('cannot read unsigned requests, other services, or operations it does not know', () => {
  expect(authorizations({ method: 'GET', path: '/', query: {}, headers: {} }, scope)).toBeUndefined();
  expect(authorizations(json('kms', 'TrentService.Decrypt', {}), scope)).toBeUndefined();
  expect(authorizations(rest('s3', 'PUT', '/inputs', { policy: '' }), scope)).toBeUndefined();
  expect(authorizations(json('dynamodb', 'DynamoDB_20120810.PutItem', {}), scope)).toBeUndefined();
});

describe('EventBridge Scheduler', () => {
  const schedule = 'arn:aws:scheduler:us-east-1:000000000000:schedule/longhaul/sch_a';
  const role = 'arn:aws:iam::000000000000:role/scheduler';
  const body = JSON.stringify({ GroupName: 'longhaul', Target: { Arn: 'arn:fn', RoleArn: role } });

  it('names the schedule in its group, and a create or update passes its role to Scheduler', () => {
    for (const [method, action] of [
      ['POST', 'CreateSchedule'],
      ['PUT', 'UpdateSchedule'],
    ] as const) {
      expect(authorizations({ ...rest('scheduler', method, '/schedules/sch_a'), body }, scope)).toEqual([
        { action: `scheduler:${action}`, resource: schedule },
        {
          action: 'iam:PassRole',
          resource: role,
          context: { 'iam:PassedToService': 'scheduler.amazonaws.com' },
        },
      ]);
    }
    expect(
      authorizations(rest('scheduler', 'DELETE', '/schedules/sch_a', { groupName: 'longhaul' }), scope),
    ).toEqual([{ action: 'scheduler:DeleteSchedule', resource: schedule }]);
  });

  it('cannot read a create without a role, or an unknown path', () => {
    expect(
      authorizations({ ...rest('scheduler', 'POST', '/schedules/sch_a'), body: '{}' }, scope),
    ).toBeUndefined();
    expect(authorizations(rest('scheduler', 'GET', '/schedule-groups/longhaul'), scope)).toBeUndefined();
  });
});

describe('S3 Vectors', () => {
  const bucket = 'arn:aws:s3vectors:us-east-1:000000000000:bucket/vectors';
  const index = `${bucket}/index/passages`;
  const call = (operation: string, body: unknown): SignedRequest => ({
    ...rest('s3vectors', 'POST', `/${operation}`),
    body: JSON.stringify(body),
  });
  const byName = { vectorBucketName: 'vectors', indexName: 'passages' };

  it('authorizes the data operations on the index, named by ARN or by bucket and index name', () => {
    for (const operation of ['PutVectors', 'DeleteVectors', 'GetVectors', 'GetIndex']) {
      expect(authorizations(call(operation, byName), scope)).toEqual([
        { action: `s3vectors:${operation}`, resource: index },
      ]);
      expect(authorizations(call(operation, { indexArn: index }), scope)).toEqual([
        { action: `s3vectors:${operation}`, resource: index },
      ]);
    }
    // An index is made as an index of its bucket.
    expect(authorizations(call('CreateIndex', byName), scope)).toEqual([
      { action: 's3vectors:CreateIndex', resource: index },
    ]);
  });

  it('needs GetVectors as well for a query that filters or returns metadata, and a listing that returns data or metadata', () => {
    const query = { ...byName, topK: 3, queryVector: { float32: [1] } };
    expect(authorizations(call('QueryVectors', { ...query, returnDistance: true }), scope)).toEqual([
      { action: 's3vectors:QueryVectors', resource: index },
    ]);
    for (const extra of [{ filter: { tenant: 'acme' } }, { returnMetadata: true }]) {
      expect(authorizations(call('QueryVectors', { ...query, ...extra }), scope)).toEqual([
        { action: 's3vectors:QueryVectors', resource: index },
        { action: 's3vectors:GetVectors', resource: index },
      ]);
    }
    expect(authorizations(call('ListVectors', byName), scope)).toEqual([
      { action: 's3vectors:ListVectors', resource: index },
    ]);
    for (const extra of [{ returnData: true }, { returnMetadata: true }]) {
      expect(authorizations(call('ListVectors', { ...byName, ...extra }), scope)).toEqual([
        { action: 's3vectors:ListVectors', resource: index },
        { action: 's3vectors:GetVectors', resource: index },
      ]);
    }
  });

  it('authorizes bucket operations on the bucket, a tagged creation with TagResource too, and listing buckets on "*"', () => {
    expect(authorizations(call('GetVectorBucket', { vectorBucketName: 'vectors' }), scope)).toEqual([
      { action: 's3vectors:GetVectorBucket', resource: bucket },
    ]);
    expect(
      authorizations(call('CreateVectorBucket', { vectorBucketName: 'vectors', tags: { a: 'b' } }), scope),
    ).toEqual([
      { action: 's3vectors:CreateVectorBucket', resource: bucket },
      { action: 's3vectors:TagResource', resource: bucket },
    ]);
    expect(authorizations(call('ListVectorBuckets', {}), scope)).toEqual([
      { action: 's3vectors:ListVectorBuckets', resource: '*' },
    ]);
  });

  it('cannot read a request that names no index, or an operation it does not know', () => {
    expect(authorizations(call('PutVectors', { vectorBucketName: 'vectors' }), scope)).toBeUndefined();
    expect(authorizations(call('QueryVectors', { indexName: 'passages' }), scope)).toBeUndefined();
    expect(authorizations(call('Forget', byName), scope)).toBeUndefined();
    expect(
      authorizations(rest('s3vectors', 'GET', `/tags/${encodeURIComponent(index)}`), scope),
    ).toBeUndefined();
  });
});

describe('Bedrock runtime', () => {
  it('authorizes InvokeModel on the foundation model the path names, under any endpoint path', () => {
    for (const path of [
      '/model/amazon.titan-embed-text-v2%3A0/invoke',
      '/bedrock/model/amazon.titan-embed-text-v2%3A0/invoke',
    ]) {
      expect(authorizations(rest('bedrock', 'POST', path), scope)).toEqual([
        {
          action: 'bedrock:InvokeModel',
          resource: 'arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-embed-text-v2:0',
        },
      ]);
    }
  });

  it('cannot tell what another Bedrock request needs, so the local stack refuses it', () => {
    expect(
      authorizations(rest('bedrock', 'GET', '/model/amazon.titan-embed-text-v2%3A0/invoke'), scope),
    ).toBeUndefined();
    expect(authorizations(rest('bedrock', 'POST', '/model/x/converse'), scope)).toBeUndefined();
  });
});
