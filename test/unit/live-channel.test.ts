import {
  ApiGatewayManagementApiClient,
  GoneException,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { ApiGatewayLiveChannel, YOUNG_CONNECTION_MS } from '../../lambdas/adapters/apigateway-live-channel';
import { DynamoDbSubscriptions } from '../../lambdas/adapters/dynamodb-subscriptions';

const management = mockClient(ApiGatewayManagementApiClient);
const dynamodb = mockClient(DynamoDBDocumentClient);

const NOW = Date.parse('2026-12-01T12:00:00.000Z');
const gone = () => new GoneException({ message: 'gone', $metadata: {} });
const tick = { type: 'progress', jobId: 'job_a', status: 'running', progress: 10, at: 'x' } as never;

/**
 * A connection table of one subscription that honours conditions as DynamoDB
 * does: an unconditional delete always removes, a conditional one only when
 * `connectedAt < :cutoff` holds.
 */
function subscriptionTable(connectedAt: string) {
  let stored = true;
  dynamodb.on(QueryCommand).callsFake(() => ({
    Items: stored ? [{ connectionId: 'c1', jobId: 'job_a', connectedAt }] : [],
  }));
  dynamodb.on(DeleteCommand).callsFake((input) => {
    const cutoff = input.ExpressionAttributeValues?.[':cutoff'];
    if (input.ConditionExpression !== undefined) {
      expect(input.ConditionExpression).toBe('connectedAt < :cutoff');
      if (!(connectedAt < cutoff)) {
        throw new ConditionalCheckFailedException({
          message: 'The conditional request failed',
          $metadata: {},
        });
      }
    }
    stored = false;
    return {};
  });
  return { exists: () => stored };
}

function channel() {
  const documents = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
  return new ApiGatewayLiveChannel(
    new ApiGatewayManagementApiClient({ region: 'us-east-1', endpoint: 'https://ws.example' }),
    new DynamoDbSubscriptions(documents, 'connections'),
    () => NOW,
  );
}

beforeEach(() => {
  management.reset();
  dynamodb.reset();
});

test('keeps a young subscription whose connection answers Gone (its $connect may still be running) and posts to it again', async () => {
  const table = subscriptionTable(new Date(NOW - 1000).toISOString());
  management.on(PostToConnectionCommand).rejectsOnce(gone()).resolves({});
  const live = channel();

  await live.publish(tick);
  await live.publish(tick);

  expect(table.exists()).toBe(true);
  expect(
    management.commandCalls(PostToConnectionCommand).map((call) => call.args[0].input.ConnectionId),
  ).toEqual(['c1', 'c1']);
});

test('removes an old subscription whose connection answers Gone, with a condition on its age', async () => {
  const table = subscriptionTable(new Date(NOW - YOUNG_CONNECTION_MS - 1).toISOString());
  management.on(PostToConnectionCommand).rejects(gone());
  const live = channel();

  await live.publish(tick);
  await live.publish(tick);

  expect(table.exists()).toBe(false);
  expect(dynamodb.commandCalls(DeleteCommand).map((call) => call.args[0].input)).toEqual([
    {
      TableName: 'connections',
      Key: { connectionId: 'c1' },
      ConditionExpression: 'connectedAt < :cutoff',
      ExpressionAttributeValues: { ':cutoff': new Date(NOW - YOUNG_CONNECTION_MS).toISOString() },
    },
  ]);
  expect(management.commandCalls(PostToConnectionCommand)).toHaveLength(1);
});

test('looks up the watchers of a job nobody watches at most once a second, whatever the tick rate', async () => {
  dynamodb.on(QueryCommand).resolves({ Items: [] });
  let now = NOW;
  const live = new ApiGatewayLiveChannel(
    new ApiGatewayManagementApiClient({ region: 'us-east-1', endpoint: 'https://ws.example' }),
    new DynamoDbSubscriptions(
      DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' })),
      'connections',
    ),
    () => now,
  );

  // Three seconds of ticks at ten a second.
  for (let i = 0; i < 30; i++) {
    await live.publish(tick);
    now += 100;
  }

  expect(dynamodb.commandCalls(QueryCommand)).toHaveLength(3);
  expect(management.commandCalls(PostToConnectionCommand)).toHaveLength(0);
});
