import { TransactionConflictException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { jobTable } from '../../config/layout';
import { DynamoDbApiKeyStore } from '../../lambdas/adapters/dynamodb-api-key-store';
import { DynamoDbJobStore, toItem } from '../../lambdas/adapters/dynamodb-job-store';
import { DynamoDbTenantBacklogs, tenantKey } from '../../lambdas/adapters/dynamodb-tenant-backlog';
import { DynamoDbTenantStore } from '../../lambdas/adapters/dynamodb-tenant-store';
import { type Job, type JobStatus, newJob } from '../../lambdas/domain/job';
import { TENANT_DEFAULTS } from '../../lambdas/domain/tenants';
import { type DynaliteTables, startDynaliteTables } from '../../local/harness/dynalite-tables';

/**
 * The tenant adapters against dynalite: the conditions, the indexes a tenant
 * record must stay out of, and counting across pages of an index.
 */

jest.setTimeout(60_000);

const at = new Date('2026-06-01T09:00:00.000Z');
let db: DynaliteTables;
let jobs: DynamoDbJobStore;
let tenants: DynamoDbTenantStore;
/** Every request the tenant store sent. */
let sent: unknown[];
/** How many of the tenant store's next writes meet another transaction on their item, as DynamoDB answers then. */
let conflicting = 0;

beforeAll(async () => {
  db = await startDynaliteTables();
  jobs = new DynamoDbJobStore(db.documents, { tableName: db.jobTableName, retentionDays: 30 });
  const recording = {
    send: (command: unknown) => {
      sent.push(command);
      if (command instanceof UpdateCommand && conflicting > 0) {
        conflicting--;
        return Promise.reject(
          new TransactionConflictException({ message: 'Transaction is ongoing for the item', $metadata: {} }),
        );
      }
      return db.documents.send(command as never);
    },
  } as unknown as DynamoDBDocumentClient;
  tenants = new DynamoDbTenantStore(recording, db.jobTableName);
});
beforeEach(() => {
  sent = [];
  conflicting = 0;
});
afterAll(async () => {
  await db?.stop();
});

let counter = 0;
async function storeJob(
  tenantId: string,
  status: JobStatus | 'scheduled',
  input: Record<string, unknown> = {},
) {
  const id = `job_${String(++counter).padStart(26, 'a')}`;
  const job = {
    ...newJob({ id, tenantId, type: 'image.generate', input, idempotencyKey: id, fingerprint: 'f' }, at),
    status,
  } as Job;
  await db.documents.send(new PutCommand({ TableName: db.jobTableName, Item: toItem(job, 30) }));
  return job;
}

describe('DynamoDbTenantStore', () => {
  it('has no record of a tenant nobody wrote', async () => {
    await expect(tenants.get('t-none')).resolves.toBeUndefined();
  });

  it('ensures a record with the defaults once, and never overwrites one', async () => {
    await expect(tenants.ensure('t-ensure', at)).resolves.toBe(true);
    await expect(tenants.get('t-ensure')).resolves.toEqual({
      tenant: 't-ensure',
      weight: 1,
      maxQueued: 10_000,
    });
    await tenants.update('t-ensure', { weight: 9 }, at);

    await expect(tenants.ensure('t-ensure', at)).resolves.toBe(false);
    await expect(tenants.get('t-ensure')).resolves.toEqual({
      tenant: 't-ensure',
      weight: 9,
      maxQueued: 10_000,
    });
  });

  it('creates a record on update with the defaults for what the changes leave out', async () => {
    await expect(tenants.update('t-new', { maxInFlight: 3 }, at)).resolves.toEqual({
      tenant: 't-new',
      weight: 1,
      maxInFlight: 3,
      maxQueued: 10_000,
    });
  });

  it('sets what the changes name, keeps the rest, and removes the cap only for null', async () => {
    await tenants.update('t-merge', { weight: 4, maxInFlight: 2, maxQueued: 20 }, at);
    await expect(tenants.update('t-merge', { weight: 6 }, at)).resolves.toEqual({
      tenant: 't-merge',
      weight: 6,
      maxInFlight: 2,
      maxQueued: 20,
    });
    await expect(tenants.update('t-merge', {}, at)).resolves.toEqual({
      tenant: 't-merge',
      weight: 6,
      maxInFlight: 2,
      maxQueued: 20,
    });
    await expect(tenants.update('t-merge', { maxInFlight: null }, at)).resolves.toEqual({
      tenant: 't-merge',
      weight: 6,
      maxQueued: 20,
    });
    await expect(tenants.get('t-merge')).resolves.toEqual({ tenant: 't-merge', weight: 6, maxQueued: 20 });
  });

  it('sets a record in one write', async () => {
    await tenants.update('t-one-write', { weight: 2, maxInFlight: null }, at);
    expect(sent).toHaveLength(1);
    expect((sent[0] as { input: unknown }).input).toEqual({
      TableName: db.jobTableName,
      Key: { pk: 'TENANT#t-one-write', sk: 'TENANT' },
      UpdateExpression:
        'SET #tenant = :tenant, updatedAt = :at, weight = :weight, maxQueued = if_not_exists(maxQueued, :maxQueued) REMOVE maxInFlight',
      ExpressionAttributeNames: { '#tenant': 'tenant' },
      ExpressionAttributeValues: {
        ':tenant': 't-one-write',
        ':at': at.toISOString(),
        ':weight': 2,
        ':maxQueued': 10_000,
      },
      ReturnValues: 'ALL_NEW',
    });
  });

  it("writes its record again when it met a backlog raise's transaction on the item, as that write did nothing", async () => {
    conflicting = 1;
    await expect(tenants.ensure('t-conflict', at)).resolves.toBe(true);
    conflicting = 1;
    await expect(tenants.update('t-conflict', { weight: 3 }, at)).resolves.toMatchObject({ weight: 3 });
    expect(sent).toHaveLength(4);
  });

  it('keeps its record out of every index of the job table', async () => {
    await storeJob('t-hidden', 'queued');
    await tenants.update('t-hidden', { weight: 3 }, at);
    const { Item } = await db.documents.send(
      new GetCommand({ TableName: db.jobTableName, Key: tenantKey('t-hidden') }),
    );
    expect(Item).toMatchObject({ tenant: 't-hidden', weight: 3 });
    for (const index of jobTable.indexes.map((i) => i.name)) {
      const { Items = [] } = await db.documents.send(
        new ScanCommand({ TableName: db.jobTableName, IndexName: index }),
      );
      const tenantItems = Items.filter((item) => String(item.pk).startsWith('TENANT#'));
      expect({ index, tenantItems }).toEqual({ index, tenantItems: [] });
    }
    const listed = await jobs.listByTenant('t-hidden', { limit: 10 });
    expect(listed.items.map((job) => job.tenantId)).toEqual(['t-hidden']);
  });

  it("counts the tenant's queued, scheduled and running jobs, nothing else and no one else's", async () => {
    for (const status of ['queued', 'queued', 'queued', 'scheduled', 'running', 'running'] as const) {
      await storeJob('t-usage', status);
    }
    for (const status of ['succeeded', 'failed', 'canceled', 'needs_review'] as const) {
      await storeJob('t-usage', status);
    }
    await storeJob('t-usage-other', 'queued');
    await storeJob('t-usage-other', 'running');

    await expect(tenants.usage('t-usage')).resolves.toEqual({ queued: 3, scheduled: 1, inFlight: 2 });
    expect(sent.map((command) => (command as { input: Record<string, unknown> }).input)).toEqual(
      ['queued', 'scheduled', 'running'].map((status) => ({
        TableName: db.jobTableName,
        IndexName: 'byTenantStatus',
        KeyConditionExpression: '#partition = :partition',
        ExpressionAttributeNames: { '#partition': 'tenantStatus' },
        ExpressionAttributeValues: { ':partition': `t-usage#${status}` },
        Select: 'COUNT',
      })),
    );
  });

  it('counts past the first page of the index', async () => {
    // Each job about 100 KB: twelve of them are more than the 1 MB one query reads.
    const input = { prompt: 'p'.repeat(100_000) };
    for (let i = 0; i < 12; i++) await storeJob('t-pages', 'queued', input);

    await expect(tenants.usage('t-pages')).resolves.toEqual({ queued: 12, scheduled: 0, inFlight: 0 });
    const queries = sent.filter(
      (command) =>
        (command as { input: { ExpressionAttributeValues: Record<string, string> } }).input
          .ExpressionAttributeValues[':partition'] === 't-pages#queued',
    );
    expect(queries.length).toBeGreaterThan(1);
  });
});

describe('DynamoDbTenantBacklogs', () => {
  const backlogs = () => new DynamoDbTenantBacklogs(db.documents, db.jobTableName);
  const counter = async (tenant: string) => {
    const { Item } = await db.documents.send(
      new GetCommand({ TableName: db.jobTableName, Key: tenantKey(tenant), ConsistentRead: true }),
    );
    return Item?.backlog;
  };

  it("admits up to the tenant's maxQueued, then refuses, and admits again once a job leaves", async () => {
    await tenants.update('b-cap', { maxQueued: 2 }, at);
    await expect(backlogs().admit('b-cap')).resolves.toBe(true);
    await expect(backlogs().admit('b-cap')).resolves.toBe(true);
    await expect(backlogs().admit('b-cap')).resolves.toBe(false);
    expect(await counter('b-cap')).toBe(2);

    const job = await storeJob('b-cap', 'queued');
    await jobs.transition(job, ['queued'], { status: 'running' }, at);

    expect(await counter('b-cap')).toBe(1);
    await expect(backlogs().admit('b-cap')).resolves.toBe(true);
    // The settings on the same item are untouched by the counter.
    await expect(tenants.get('b-cap')).resolves.toEqual({ tenant: 'b-cap', weight: 1, maxQueued: 2 });
  });

  it('caps a tenant without a record by the default, and a counter alone is no record', async () => {
    await db.documents.send(
      new PutCommand({
        TableName: db.jobTableName,
        Item: { ...tenantKey('b-default'), backlog: TENANT_DEFAULTS.maxQueued - 1 },
      }),
    );
    await expect(backlogs().admit('b-default')).resolves.toBe(true);
    await expect(backlogs().admit('b-default')).resolves.toBe(false);
    await expect(tenants.get('b-default')).resolves.toBeUndefined();
    await expect(tenants.ensure('b-default', at)).resolves.toBe(true);
    expect(await counter('b-default')).toBe(TENANT_DEFAULTS.maxQueued);
  });

  it('gives back an admission, never below 0, and lists every tenant ever admitted', async () => {
    await backlogs().admit('b-back');
    await backlogs().giveBack('b-back');
    await backlogs().giveBack('b-back');
    expect(await counter('b-back')).toBe(0);
    await expect(backlogs().tenants()).resolves.toEqual(expect.arrayContaining(['b-back', 'b-cap']));
  });

  it("admits a batch's jobs with one read and one write, as many as maxQueued leaves room for", async () => {
    await tenants.update('b-many', { maxQueued: 5 }, at);
    const requests: { input: unknown }[] = [];
    const recording = {
      send: (command: { input: unknown }) => {
        requests.push(command);
        return db.documents.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;
    const batch = new DynamoDbTenantBacklogs(recording, db.jobTableName);
    await backlogs().admit('b-many');

    await expect(batch.admitUpTo('b-many', 3)).resolves.toBe(3);
    expect(requests.map((request) => request.input)).toEqual([
      {
        TableName: db.jobTableName,
        Key: tenantKey('b-many'),
        ConsistentRead: true,
        ProjectionExpression: 'backlog, maxQueued',
      },
      {
        TableName: db.jobTableName,
        Key: tenantKey('b-many'),
        UpdateExpression: 'ADD backlog :count',
        // Above 0, the tenant is listed already: the counter it answers says no listing is needed.
        ConditionExpression: '(attribute_not_exists(backlog) OR backlog <= :room) AND maxQueued = :cap',
        ExpressionAttributeValues: { ':count': 3, ':room': 2, ':cap': 5 },
        ReturnValues: 'UPDATED_NEW',
      },
    ]);
    // One place left: a batch of 10 gets it, the next gets none, and nothing was written for it.
    await expect(batch.admitUpTo('b-many', 10)).resolves.toBe(1);
    requests.length = 0;
    await expect(batch.admitUpTo('b-many', 10)).resolves.toBe(0);
    expect(requests).toHaveLength(1);
    expect(await counter('b-many')).toBe(5);
  });

  it('admits fewer when another admission took some of the room between the reading and the write', async () => {
    await tenants.update('b-race', { maxQueued: 4 }, at);
    let raced = false;
    const racing = {
      send: async (command: { input: { UpdateExpression?: string } }) => {
        if (command.input.UpdateExpression === 'ADD backlog :count' && !raced) {
          raced = true;
          // Another request takes three places after this one read an empty backlog.
          for (let n = 0; n < 3; n++) await backlogs().admit('b-race');
        }
        return db.documents.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;

    await expect(new DynamoDbTenantBacklogs(racing, db.jobTableName).admitUpTo('b-race', 4)).resolves.toBe(1);
    expect(await counter('b-race')).toBe(4);
  });

  it('caps a batch of a tenant without a record by the default, on the condition that it still has none', async () => {
    await db.documents.send(
      new PutCommand({
        TableName: db.jobTableName,
        Item: { ...tenantKey('b-many-default'), backlog: TENANT_DEFAULTS.maxQueued - 2 },
      }),
    );
    await expect(backlogs().admitUpTo('b-many-default', 5)).resolves.toBe(2);
    expect(await counter('b-many-default')).toBe(TENANT_DEFAULTS.maxQueued);
    // A first admission lists the tenant for the recounts, as a single one does.
    await backlogs().admitUpTo('b-many-first', 3);
    await expect(backlogs().tenants()).resolves.toEqual(expect.arrayContaining(['b-many-first']));
  });

  it("gives back a batch's unused admissions in one write, never below 0", async () => {
    await backlogs().admitUpTo('b-many-back', 5);
    await backlogs().giveBack('b-many-back', 3);
    expect(await counter('b-many-back')).toBe(2);
    await backlogs().giveBack('b-many-back', 3);
    expect(await counter('b-many-back')).toBe(2);
    await backlogs().giveBack('b-many-back', 0);
    expect(await counter('b-many-back')).toBe(2);
  });

  it('moves the counter with the status writes that take jobs out of the backlog or put them back', async () => {
    await backlogs().admit('b-moves');
    await backlogs().admit('b-moves');
    const [first, second] = [await storeJob('b-moves', 'queued'), await storeJob('b-moves', 'queued')];
    await jobs.transition(first, ['queued'], { status: 'canceled' }, at);
    // A duplicate of the same write misses its condition and moves nothing.
    await jobs.transition(first, ['queued'], { status: 'canceled' }, at);
    expect(await counter('b-moves')).toBe(1);
    const running = await jobs.transition(second, ['queued'], { status: 'running' }, at);
    const reviewed = await jobs.transition(running as Job, ['running'], { status: 'needs_review' }, at);
    expect(await counter('b-moves')).toBe(0);
    await jobs.requeueForResubmission(reviewed as Job, at);
    expect(await counter('b-moves')).toBe(1);
  });

  it('raises a counter in one write, and lists its tenant with one write more only when it leaves 0', async () => {
    const writes: string[] = [];
    const recording = {
      send: (command: { constructor: { name: string }; input: { Key?: { pk?: string } } }) => {
        writes.push(`${command.constructor.name} ${command.input.Key?.pk ?? ''}`);
        return db.documents.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;
    const counted = new DynamoDbTenantBacklogs(recording, db.jobTableName);

    // Five admissions at once from 0, as five requests of one tenant arrive together.
    await expect(Promise.all(Array.from({ length: 5 }, () => counted.admit('b-writes')))).resolves.toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(writes.sort()).toEqual([
      'UpdateCommand BACKLOGS',
      ...Array.from({ length: 5 }, () => 'UpdateCommand TENANT#b-writes'),
    ]);
    expect(await counter('b-writes')).toBe(5);
    expect(await counted.tenants()).toContain('b-writes');
  });

  it('lists again a tenant whose backlog a chunk or a requeue raised after a recount took it off the list', async () => {
    const offTheList = async (tenant: string) => {
      await backlogs().admit(tenant);
      await backlogs().giveBack(tenant);
      await backlogs().recount(tenant);
      expect(await backlogs().tenants()).not.toContain(tenant);
    };
    await offTheList('b-chunk');
    await backlogs().admitPastCap('b-chunk');
    expect(await counter('b-chunk')).toBe(1);
    expect(await backlogs().tenants()).toContain('b-chunk');

    await offTheList('b-requeue');
    const job = await storeJob('b-requeue', 'needs_review');
    await jobs.requeueForResubmission(job, at);
    expect(await counter('b-requeue')).toBe(1);
    expect(await backlogs().tenants()).toContain('b-requeue');

    // Raised from a counter above 0, the tenant is listed already: one write, none to the list.
    await backlogs().admitPastCap('b-chunk');
    expect(await counter('b-chunk')).toBe(2);
    expect(await backlogs().tenants()).toContain('b-chunk');
  });

  it('sets a counter that is off right only once two recounts in a row found it off the same way', async () => {
    for (const status of ['queued', 'queued', 'scheduled', 'running'] as const)
      await storeJob('b-recount', status);
    await backlogs().admit('b-recount');

    await expect(backlogs().recount('b-recount')).resolves.toEqual({
      tenant: 'b-recount',
      counted: 1,
      queued: 2,
      scheduled: 1,
      corrected: false,
    });
    expect(await counter('b-recount')).toBe(1);
    await expect(backlogs().recount('b-recount')).resolves.toMatchObject({ counted: 1, corrected: true });
    expect(await counter('b-recount')).toBe(3);
    await expect(backlogs().recount('b-recount')).resolves.toMatchObject({ counted: 3, corrected: false });
  });

  it('leaves a counter that moved between two recounts alone', async () => {
    await storeJob('b-moving', 'queued');
    await backlogs().recount('b-moving');
    await backlogs().admit('b-moving');
    await backlogs().admit('b-moving');

    await expect(backlogs().recount('b-moving')).resolves.toMatchObject({ counted: 2, corrected: false });
    expect(await counter('b-moving')).toBe(2);
  });
});

describe('DynamoDbApiKeyStore.hasKeys', () => {
  const keys = () => new DynamoDbApiKeyStore(db.documents, db.apiKeyTableName);
  const putKey = (keyHash: string, tenantId: string, extra: Record<string, unknown> = {}) =>
    db.documents.send(
      new PutCommand({
        TableName: db.apiKeyTableName,
        Item: { keyHash, tenantId, role: 'tenant', createdAt: at.toISOString(), ...extra },
      }),
    );

  it('knows the tenants keys were issued to, revoked keys included, and no other name', async () => {
    await putKey('hash-1', 'k-acme');
    await putKey('hash-2', 'k-acme');
    await putKey('hash-3', 'k-revoked', { disabled: true });

    await expect(keys().hasKeys('k-acme')).resolves.toBe(true);
    await expect(keys().hasKeys('k-revoked')).resolves.toBe(true);
    await expect(keys().hasKeys('k-nobody')).resolves.toBe(false);
    await expect(keys().hasKeys('k-acm')).resolves.toBe(false);
  });
});
