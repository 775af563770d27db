import {
  APIGatewayClient,
  ConflictException,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  GetApiKeysCommand,
  GetUsagePlanKeysCommand,
} from '@aws-sdk/client-api-gateway';
import { mockClient } from 'aws-sdk-client-mock';
import { usageKeyFor } from '../../bin/api-key';

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

beforeEach(() => apiGateway.reset());

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
