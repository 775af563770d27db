import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayRequestAuthorizerEvent, Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { hashApiKey } from '../../lambdas/shared/api-keys';

process.env.API_KEY_TABLE_NAME = 'api-keys';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';

const ddb = mockClient(DynamoDBDocumentClient);
const { handler } =
  require('../../lambdas/authorizer/handler') as typeof import('../../lambdas/authorizer/handler');

const context = { functionName: 'authorizer', awsRequestId: 'req-1' } as Context;
const methodArn = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/v1/jobs';
const event = (headers: Record<string, string>): APIGatewayRequestAuthorizerEvent =>
  ({ type: 'REQUEST', methodArn, headers }) as unknown as APIGatewayRequestAuthorizerEvent;

beforeEach(() => ddb.reset());

describe('authorizer', () => {
  it('looks the key up by its hash and allows the whole stage with the tenant in context', async () => {
    ddb.on(GetCommand).resolves({
      Item: { keyHash: hashApiKey('secret-1'), tenantId: 'acme', role: 'tenant', usageKey: 'usage-acme' },
    });

    const result = await handler(event({ 'x-api-key': 'secret-1' }), context);

    expect(ddb.commandCalls(GetCommand)[0]?.args[0].input).toEqual({
      TableName: 'api-keys',
      Key: { keyHash: hashApiKey('secret-1') },
    });
    expect(result).toEqual({
      principalId: 'acme',
      policyDocument: {
        Version: '2012-10-17',
        Statement: [
          {
            Action: 'execute-api:Invoke',
            Effect: 'Allow',
            Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*',
          },
        ],
      },
      context: { tenantId: 'acme', role: 'tenant' },
      usageIdentifierKey: 'usage-acme',
    });
  });

  it.each([
    ['an unknown key', { 'X-API-Key': 'nope' }, undefined],
    ['a disabled key', { 'X-API-Key': 'old' }, { tenantId: 'acme', role: 'tenant', disabled: true }],
    ['no key', {}, undefined],
  ])('answers Unauthorized for %s', async (_, headers, item) => {
    ddb.on(GetCommand).resolves({ Item: item });
    await expect(handler(event(headers as Record<string, string>), context)).rejects.toThrow(
      /^Unauthorized$/,
    );
  });

  it('never sends the raw key to the table', async () => {
    ddb.on(GetCommand).resolves({});
    await expect(handler(event({ 'X-API-Key': 'raw-secret' }), context)).rejects.toThrow('Unauthorized');
    expect(JSON.stringify(ddb.calls().map((call) => call.args[0].input))).not.toContain('raw-secret');
  });
});
