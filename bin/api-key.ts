/**
 * Operator tool: issues and revokes API keys of a deployed Longhaul stack.
 *
 *   npm run api-key -- create --tenant acme [--admin] [--stack Longhaul]
 *   npm run api-key -- revoke --key lh_… [--stack Longhaul]
 *
 * A new key is printed once and stored only as its SHA-256. Each tenant gets
 * one API Gateway usage-plan key (never shown to clients) that the authorizer
 * returns as the usage identifier, so throttling is per tenant, not per key.
 * A revoked key stops working once the gateway's authorizer cache expires.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import {
  APIGatewayClient,
  type ApiKey,
  ConflictException,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  paginateGetApiKeys,
  paginateGetUsagePlanKeys,
} from '@aws-sdk/client-api-gateway';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type ApiKeyRecord, generateApiKey, hashApiKey } from '../lambdas/shared/api-keys';

const TENANT_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

async function stackOutputs(stackName: string): Promise<Record<string, string>> {
  const { Stacks = [] } = await new CloudFormationClient({}).send(
    new DescribeStacksCommand({ StackName: stackName }),
  );
  return Object.fromEntries((Stacks[0]?.Outputs ?? []).map((o) => [o.OutputKey ?? '', o.OutputValue ?? '']));
}

function output(outputs: Record<string, string>, name: string): string {
  const value = outputs[name];
  if (!value) throw new Error(`The stack has no output ${name}; deploy it first.`);
  return value;
}

/**
 * The tenant's usage-plan key value, created and attached to the usage plan on
 * first use. Both listings are read to their last page: `nameQuery` matches
 * names by prefix (`longhaul-tenant-a` finds `longhaul-tenant-acme` too), so
 * the tenant's own key may be on any page, and missing it would give the
 * tenant a second key on the plan, with a second set of limits.
 */
export async function usageKeyFor(
  apiGateway: APIGatewayClient,
  usagePlanId: string,
  name: string,
): Promise<string> {
  for await (const page of paginateGetUsagePlanKeys(
    { client: apiGateway },
    { usagePlanId, nameQuery: name },
  )) {
    const onPlan = page.items?.find((item) => item.name === name && item.value);
    if (onPlan?.value) return onPlan.value;
  }
  let key: ApiKey | undefined;
  for await (const page of paginateGetApiKeys(
    { client: apiGateway },
    { nameQuery: name, includeValues: true },
  )) {
    key = page.items?.find((item) => item.name === name);
    if (key) break;
  }
  if (!key) {
    key = await apiGateway.send(
      new CreateApiKeyCommand({ name, enabled: true, value: randomBytes(30).toString('base64url') }),
    );
  }
  try {
    await apiGateway.send(new CreateUsagePlanKeyCommand({ usagePlanId, keyId: key.id, keyType: 'API_KEY' }));
  } catch (error) {
    if (!(error instanceof ConflictException)) throw error;
  }
  if (!key.value) throw new Error(`API Gateway key ${name} has no value.`);
  return key.value;
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      tenant: { type: 'string' },
      admin: { type: 'boolean', default: false },
      key: { type: 'string' },
      stack: { type: 'string', default: 'Longhaul' },
    },
  });
  const outputs = await stackOutputs(values.stack);
  const documents = DynamoDBDocumentClient.from(new DynamoDBClient({}));
  const tableName = output(outputs, 'ApiKeyTableName');

  switch (positionals[0]) {
    case 'create': {
      const tenantId = values.admin ? 'admin' : values.tenant;
      if (!tenantId || !TENANT_PATTERN.test(tenantId)) {
        throw new Error('--tenant must be 1-63 lower-case letters, digits or dashes (or pass --admin).');
      }
      const usageKey = await usageKeyFor(
        new APIGatewayClient({}),
        output(outputs, 'UsagePlanId'),
        `longhaul-${values.admin ? 'admin' : `tenant-${tenantId}`}`,
      );
      const apiKey = generateApiKey();
      const record: ApiKeyRecord = {
        keyHash: hashApiKey(apiKey),
        tenantId,
        role: values.admin ? 'admin' : 'tenant',
        usageKey,
        createdAt: new Date().toISOString(),
      };
      await documents.send(
        new PutCommand({
          TableName: tableName,
          Item: record,
          ConditionExpression: 'attribute_not_exists(keyHash)',
        }),
      );
      process.stdout.write(`${apiKey}\n`);
      process.stderr.write(`Key for ${record.role} ${tenantId} created; it is shown only this once.\n`);
      return;
    }
    case 'revoke': {
      if (!values.key) throw new Error('--key is required.');
      await documents.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { keyHash: hashApiKey(values.key) },
          UpdateExpression: 'SET disabled = :true',
          ConditionExpression: 'attribute_exists(keyHash)',
          ExpressionAttributeValues: { ':true': true },
        }),
      );
      process.stderr.write('Key revoked; the gateway may accept it until its authorizer cache expires.\n');
      return;
    }
    default:
      throw new Error(
        'Usage: api-key create --tenant <id> [--admin] | api-key revoke --key <key>  [--stack <name>]',
      );
  }
}

// Run as a command (npm run api-key), not when a test imports usageKeyFor.
if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`api-key: ${(error as Error).message}\n`);
    process.exit(1);
  });
}
