/**
 * Operator tool: issues and revokes API keys of a deployed Longhaul stack.
 *
 *   npm run api-key -- create --tenant acme [--admin] [--stack Longhaul]
 *   npm run api-key -- revoke --key lh_… [--stack Longhaul]
 *
 * A new key is printed once and stored only as its SHA-256. A tenant's first
 * key also gives it its settings record (the defaults, which
 * `PUT /v1/admin/tenants/{tenant}` changes); a record already there is kept.
 * Each tenant gets
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
import { DynamoDbTenantStore } from '../lambdas/adapters/dynamodb-tenant-store';
import { ADMIN_TENANT_ID } from '../lambdas/domain/tenants';
import { type ApiKeyRecord, generateApiKey, hashApiKey } from '../lambdas/shared/api-keys';

/** The tenant names this tool issues keys for: a narrower set than the names a tenant may have (TENANT_ID_PATTERN). */
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

export interface CreateKeyDeps {
  readonly documents: DynamoDBDocumentClient;
  readonly apiGateway: APIGatewayClient;
  readonly apiKeyTableName: string;
  readonly jobTableName: string;
  readonly usagePlanId: string;
  readonly now: Date;
}

/**
 * Issues a key of `tenantId` (or the admin key). A tenant's settings record is
 * made first, with the defaults unless it has one, so every key's tenant has
 * settings an operator can read and change; then the key is stored, as its hash.
 */
export async function createKey(
  deps: CreateKeyDeps,
  request: { readonly tenantId: string | undefined; readonly admin: boolean },
): Promise<{ readonly apiKey: string; readonly record: ApiKeyRecord; readonly tenantCreated: boolean }> {
  const tenantId = request.admin ? ADMIN_TENANT_ID : request.tenantId;
  if (!tenantId || !TENANT_PATTERN.test(tenantId)) {
    throw new Error('--tenant must be 1-63 lower-case letters, digits or dashes (or pass --admin).');
  }
  if (!request.admin && tenantId === ADMIN_TENANT_ID) {
    throw new Error(`--tenant ${ADMIN_TENANT_ID} is the admin key's name; pass --admin for an admin key.`);
  }
  const tenantCreated = request.admin
    ? false
    : await new DynamoDbTenantStore(deps.documents, deps.jobTableName).ensure(tenantId, deps.now);
  const usageKey = await usageKeyFor(
    deps.apiGateway,
    deps.usagePlanId,
    `longhaul-${request.admin ? 'admin' : `tenant-${tenantId}`}`,
  );
  const apiKey = generateApiKey();
  const record: ApiKeyRecord = {
    keyHash: hashApiKey(apiKey),
    tenantId,
    role: request.admin ? 'admin' : 'tenant',
    usageKey,
    createdAt: deps.now.toISOString(),
  };
  await deps.documents.send(
    new PutCommand({
      TableName: deps.apiKeyTableName,
      Item: record,
      ConditionExpression: 'attribute_not_exists(keyHash)',
    }),
  );
  return { apiKey, record, tenantCreated };
}

export const USAGE = `Issues and revokes the API keys of a Longhaul stack deployed to AWS.
The local stack (npm start) needs none of this: it takes its keys from LONGHAUL_API_KEYS
and LONGHAUL_ADMIN_KEY.

Usage:
  npm run api-key -- create --tenant <tenant> [--stack <name>]
  npm run api-key -- create --admin [--stack <name>]
  npm run api-key -- revoke --key <key> [--stack <name>]

  --tenant <tenant>  the tenant the key is for: 1-63 lower-case letters, digits or dashes
  --admin            the operator key (review, dlq) instead of a tenant's
  --key <key>        the key to revoke
  --stack <name>     the CloudFormation stack (default Longhaul)

A new key is printed once, on stdout, and stored only as its SHA-256.

AWS: the credentials and region of the account the stack is deployed in, as the
AWS CLI takes them: AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)
and AWS_REGION.

Examples:
  AWS_PROFILE=prod AWS_REGION=eu-west-1 npm run api-key -- create --tenant acme
  npm run api-key -- revoke --key lh_… --stack Longhaul-staging
`;

/** Errors of the AWS SDK that mean it was never told which account or region: what to set, not the SDK's words. */
export function awsSetupHint(error: unknown): string | undefined {
  const { name, message } = error as Error;
  const noRegion = /Region is missing/i.test(message ?? '');
  const noCredentials =
    name === 'CredentialsProviderError' || /Could not load credentials/i.test(message ?? '');
  if (!noRegion && !noCredentials) return undefined;
  return `${noRegion ? 'no AWS region is set' : 'no AWS credentials were found'}.
  api-key manages the API keys of a Longhaul stack deployed to AWS (the local stack needs none:
  it takes its keys from LONGHAUL_API_KEYS and LONGHAUL_ADMIN_KEY).
  Set the account and region the stack is in, e.g. AWS_PROFILE=<profile> AWS_REGION=<region>,
  and --stack <name> if the stack is not called Longhaul. npm run api-key -- --help says more.`;
}

async function main(argv: readonly string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      tenant: { type: 'string' },
      admin: { type: 'boolean', default: false },
      key: { type: 'string' },
      stack: { type: 'string', default: 'Longhaul' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals[0] === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  if (positionals[0] !== 'create' && positionals[0] !== 'revoke') {
    throw new Error(
      `${positionals[0] ? `unknown command ${positionals[0]}` : 'name a command'}: create or revoke.\n${USAGE}`,
    );
  }
  if (positionals[0] === 'revoke' && !values.key) throw new Error('--key is required.');
  const outputs = await stackOutputs(values.stack);
  const documents = DynamoDBDocumentClient.from(new DynamoDBClient({}));
  const tableName = output(outputs, 'ApiKeyTableName');

  switch (positionals[0]) {
    case 'create': {
      const { apiKey, record, tenantCreated } = await createKey(
        {
          documents,
          apiGateway: new APIGatewayClient({}),
          apiKeyTableName: tableName,
          jobTableName: output(outputs, 'JobTableName'),
          usagePlanId: output(outputs, 'UsagePlanId'),
          now: new Date(),
        },
        { tenantId: values.tenant, admin: values.admin },
      );
      if (tenantCreated)
        process.stderr.write(`Tenant ${record.tenantId} created with the default settings.\n`);
      process.stdout.write(`${apiKey}\n`);
      process.stderr.write(
        `Key for ${record.role} ${record.tenantId} created; it is shown only this once.\n`,
      );
      return;
    }
    case 'revoke': {
      await documents.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { keyHash: hashApiKey(values.key as string) },
          UpdateExpression: 'SET disabled = :true',
          ConditionExpression: 'attribute_exists(keyHash)',
          ExpressionAttributeValues: { ':true': true },
        }),
      );
      process.stderr.write('Key revoked; the gateway may accept it until its authorizer cache expires.\n');
      return;
    }
  }
}

// Run as a command (npm run api-key), not when a test imports usageKeyFor.
if (require.main === module) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`api-key: ${awsSetupHint(error) ?? (error as Error).message}\n`);
    process.exit(1);
  });
}
