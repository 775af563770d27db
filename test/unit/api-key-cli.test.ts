import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  APIGatewayClient,
  ConflictException,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  GetApiKeysCommand,
  GetUsagePlanKeysCommand,
} from '@aws-sdk/client-api-gateway';
import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { createKey, usageKeyFor } from '../../bin/api-key';
import { hashApiKey } from '../../lambdas/shared/api-keys';

const apiGateway = mockClient(APIGatewayClient);
const client = new APIGatewayClient({ region: 'us-east-1' });
const PLAN = 'plan-1';
const NAME = 'longhaul-tenant-a';

/** Keys whose names start with the tenant's, as API Gateway's prefix `nameQuery` returns them. */
const neighbours = (count: number) =>
  Array.from({ length: count }, (_, index) => ({
    id: `k${index}`,
    name: `${NAME}${index}`,
    value: `v${index}`,
  }));

const documents = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
const dynamodb = mockClient(documents);

beforeEach(() => {
  apiGateway.reset();
  dynamodb.reset();
});

describe('usageKeyFor', () => {
  it('finds the tenant’s key on a later page of the usage plan and creates nothing', async () => {
    apiGateway
      .on(GetUsagePlanKeysCommand, { usagePlanId: PLAN, nameQuery: NAME })
      .resolvesOnce({ items: neighbours(25), position: 'page-2' })
      .resolvesOnce({ items: [{ id: 'ka', name: NAME, type: 'API_KEY', value: 'tenant-a-value' }] });
    apiGateway.on(GetApiKeysCommand).resolves({ items: neighbours(25) });

    await expect(usageKeyFor(client, PLAN, NAME)).resolves.toBe('tenant-a-value');
    // Both pages were read (the paginator reuses one input object, so the calls cannot tell them apart).
    expect(apiGateway.commandCalls(GetUsagePlanKeysCommand)).toHaveLength(2);
    expect(apiGateway.commandCalls(CreateApiKeyCommand)).toHaveLength(0);
    expect(apiGateway.commandCalls(CreateUsagePlanKeyCommand)).toHaveLength(0);
  });

  it('attaches an existing key found on a later page of the account’s keys instead of creating a second one', async () => {
    apiGateway.on(GetUsagePlanKeysCommand).resolves({ items: neighbours(3) });
    apiGateway
      .on(GetApiKeysCommand, { nameQuery: NAME, includeValues: true })
      .resolvesOnce({ items: neighbours(25), position: 'page-2' })
      .resolvesOnce({ items: [{ id: 'ka', name: NAME, value: 'tenant-a-value' }] });
    apiGateway.on(CreateUsagePlanKeyCommand).resolves({});

    await expect(usageKeyFor(client, PLAN, NAME)).resolves.toBe('tenant-a-value');
    expect(apiGateway.commandCalls(CreateApiKeyCommand)).toHaveLength(0);
    expect(apiGateway.commandCalls(CreateUsagePlanKeyCommand).map((call) => call.args[0].input)).toEqual([
      { usagePlanId: PLAN, keyId: 'ka', keyType: 'API_KEY' },
    ]);
  });

  it('creates and attaches the key once when the tenant has none', async () => {
    apiGateway.on(GetUsagePlanKeysCommand).resolves({ items: [] });
    apiGateway.on(GetApiKeysCommand).resolves({ items: neighbours(2) });
    apiGateway.on(CreateApiKeyCommand).resolves({ id: 'knew', name: NAME, value: 'new-value' });
    // Another operator attached it a moment ago: the key is on the plan either way.
    apiGateway
      .on(CreateUsagePlanKeyCommand)
      .rejects(new ConflictException({ message: 'exists', $metadata: {} }));

    await expect(usageKeyFor(client, PLAN, NAME)).resolves.toBe('new-value');
    expect(apiGateway.commandCalls(CreateApiKeyCommand).map((call) => call.args[0].input.name)).toEqual([
      NAME,
    ]);
    expect(
      apiGateway.commandCalls(CreateUsagePlanKeyCommand).map((call) => call.args[0].input.keyId),
    ).toEqual(['knew']);
  });
});

describe('createKey', () => {
  const now = new Date('2026-06-01T09:00:00.000Z');
  const deps = {
    documents,
    apiGateway: client,
    apiKeyTableName: 'api-keys',
    jobTableName: 'jobs',
    usagePlanId: PLAN,
    now,
  };
  /** The usage-plan key is on the plan already. */
  const onPlan = (name: string) =>
    apiGateway.on(GetUsagePlanKeysCommand).resolves({ items: [{ id: 'k', name, value: 'usage-value' }] });
  const puts = () => dynamodb.commandCalls(PutCommand).map((call) => call.args[0].input);
  const updates = () => dynamodb.commandCalls(UpdateCommand).map((call) => call.args[0].input);

  it("gives a tenant's key a settings record with the defaults, before the key is stored", async () => {
    onPlan('longhaul-tenant-acme');
    dynamodb.on(PutCommand).resolves({});
    dynamodb.on(UpdateCommand).resolves({});

    const { apiKey, tenantCreated } = await createKey(deps, { tenantId: 'acme', admin: false });

    expect(tenantCreated).toBe(true);
    // Settings are added to the tenant's item, which may hold its backlog counter already.
    expect(updates()).toEqual([
      {
        TableName: 'jobs',
        Key: { pk: 'TENANT#acme', sk: 'TENANT' },
        UpdateExpression: 'SET #tenant = :tenant, weight = :weight, maxQueued = :maxQueued, updatedAt = :at',
        ConditionExpression: 'attribute_not_exists(weight)',
        ExpressionAttributeNames: { '#tenant': 'tenant' },
        ExpressionAttributeValues: {
          ':tenant': 'acme',
          ':weight': 1,
          ':maxQueued': 10_000,
          ':at': now.toISOString(),
        },
      },
    ]);
    expect(puts()).toEqual([
      {
        TableName: 'api-keys',
        Item: {
          keyHash: hashApiKey(apiKey),
          tenantId: 'acme',
          role: 'tenant',
          usageKey: 'usage-value',
          createdAt: now.toISOString(),
        },
        ConditionExpression: 'attribute_not_exists(keyHash)',
      },
    ]);
  });

  it("keeps a tenant's record as it is and still issues the key", async () => {
    onPlan('longhaul-tenant-acme');
    dynamodb
      .on(UpdateCommand, { TableName: 'jobs' })
      .rejects(new ConditionalCheckFailedException({ message: 'exists', $metadata: {} }));
    dynamodb.on(PutCommand, { TableName: 'api-keys' }).resolves({});

    const { tenantCreated, record } = await createKey(deps, { tenantId: 'acme', admin: false });

    expect({ tenantCreated, tenantId: record.tenantId }).toEqual({ tenantCreated: false, tenantId: 'acme' });
    expect(updates().map((input) => input.TableName)).toEqual(['jobs']);
    expect(puts().map((input) => input.TableName)).toEqual(['api-keys']);
  });

  it('gives the admin key no tenant record', async () => {
    onPlan('longhaul-admin');
    dynamodb.on(PutCommand).resolves({});

    const { record } = await createKey(deps, { tenantId: undefined, admin: true });

    expect(record).toMatchObject({ tenantId: 'admin', role: 'admin' });
    expect(puts().map((input) => input.TableName)).toEqual(['api-keys']);
  });

  it.each([
    ['no tenant', undefined, '--tenant must be'],
    ['a tenant name with capitals', 'Acme', '--tenant must be'],
    ["the admin key's name", 'admin', 'pass --admin'],
  ])('refuses %s and writes nothing', async (_, tenantId, message) => {
    await expect(createKey(deps, { tenantId, admin: false })).rejects.toThrow(message);
    expect(puts()).toEqual([]);
    expect(apiGateway.calls()).toHaveLength(0);
  });
});

describe('npm run api-key, as a command', () => {
  const directory = mkdtempSync(join(tmpdir(), 'longhaul-api-key-'));
  /** The command run with no AWS setup at all: no profile, no config files, no instance metadata. */
  const apiKey = (args: readonly string[], aws: Record<string, string> = {}) =>
    spawnSync(process.execPath, [require.resolve('tsx/cli'), 'bin/api-key.ts', ...args], {
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH ?? '',
        HOME: directory,
        AWS_CONFIG_FILE: join(directory, 'config'),
        AWS_SHARED_CREDENTIALS_FILE: join(directory, 'credentials'),
        AWS_EC2_METADATA_DISABLED: 'true',
        ...aws,
      },
      timeout: 60_000,
    });

  it('says what it does, its commands and what AWS settings it needs, with --help', () => {
    const help = apiKey(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Issues and revokes the API keys of a Longhaul stack deployed to AWS\.\n/);
    for (const text of [
      'create --tenant <tenant>',
      'create --admin',
      'revoke --key <key>',
      'AWS_PROFILE',
      'AWS_REGION',
      '--stack <name>',
    ])
      expect(help.stdout).toContain(text);
  });

  it.each([
    ['no region', {}, 'no AWS region is set'],
    ['no credentials', { AWS_REGION: 'eu-west-1' }, 'no AWS credentials were found'],
  ])('says what to set, not the SDK’s words, with %s', (_, aws, what) => {
    const result = apiKey(['create', '--tenant', 'acme'], aws);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      `api-key: ${what}.\n  api-key manages the API keys of a Longhaul stack deployed to AWS`,
    );
    expect(result.stderr).toContain('AWS_PROFILE=<profile> AWS_REGION=<region>');
    expect(result.stderr).not.toMatch(/Region is missing|Could not load credentials/);
  });
});
