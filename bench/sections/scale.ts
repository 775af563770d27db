import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbSlotPool, slotPoolKey } from '../../lambdas/adapters/dynamodb-slot-pool';
import { slotHolderOf } from '../../lambdas/domain/job';
import { startDynaliteTables } from '../../local/harness/dynalite-tables';
import { itemBytes } from '../cost';
import { fmt, print } from '../support/common';

/**
 * How far one provider's slot pool item goes. Every grant, release and
 * chooser's read of a provider names that one item, and DynamoDB serves one
 * item from one partition: at most 1,000 write units and 3,000 read units a
 * second (developer guide, "Key range throughput exceeded"), a write taking
 * one unit per KB of the larger of the item before and after, a
 * transaction's write two, a strongly consistent read one per 4 KB. The item
 * grows with the tenants holding slots or waiting (a holder set and a pass
 * each), so what a pool sustains falls as tenants grow. This section builds
 * the item through the real adapter for growing tenant counts, measures its
 * size, and divides the partition's units by what a job spends on the item:
 * the requests naming it per job, counted by the cost section (this run's,
 * else the last recorded run's).
 */

const PARTITION_WRITE_UNITS = 1_000;
const PARTITION_READ_UNITS = 3_000;
const TENANT_COUNTS = [1, 10, 100, 1_000] as const;
/** The slots held when the tenants only wait: a pool of this limit, full. */
const HELD_WHILE_WAITING = 10;
const RESULTS_FILE = join(__dirname, '..', 'results.json');

export interface PoolScaleRow {
  readonly tenants: number;
  /** Every tenant holding one slot. */
  readonly holdingBytes: number;
  /** Ten slots held, every tenant waiting with its pass. */
  readonly waitingBytes: number;
  /** Jobs a second the item sustains at the larger size, by its write units and by its read units. */
  readonly jobsPerSecondByWrites: number;
  readonly jobsPerSecondByReads: number;
}

export interface PoolScaleFigures {
  /** Requests naming the pool item per 3 s job, as the cost section counted them. */
  readonly poolRequestsPerJob: Record<string, number>;
  readonly poolRequestsFrom: 'this run' | 'the last recorded run';
  readonly rows: readonly PoolScaleRow[];
}

const jobId = (n: number) => `job_${n.toString(36).padStart(26, 'a')}`;
const tenantName = (n: number) => `tenant-${String(n).padStart(6, '0')}`;
const holder = (n: number) =>
  slotHolderOf({ id: jobId(n), createdAt: '2026-12-07T00:00:00.000Z', resubmissions: 0 });

/** What this section reads of a run's figures: the cost section's pool requests of its 3 s job. */
interface RecordedCost {
  readonly cost?: { readonly runs: readonly { readonly poolRequests?: Record<string, number> }[] };
}

/** The pool requests per 3 s job: this run's cost section, else the last recorded one. */
function poolRequests(
  current: RecordedCost,
): Pick<PoolScaleFigures, 'poolRequestsPerJob' | 'poolRequestsFrom'> | undefined {
  const now = current.cost?.runs[0]?.poolRequests;
  if (now && Object.keys(now).length > 0) return { poolRequestsPerJob: now, poolRequestsFrom: 'this run' };
  if (!existsSync(RESULTS_FILE)) return undefined;
  const recorded = (JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as RecordedCost).cost?.runs[0]
    ?.poolRequests;
  return recorded && Object.keys(recorded).length > 0
    ? { poolRequestsPerJob: recorded, poolRequestsFrom: 'the last recorded run' }
    : undefined;
}

export async function scaleSection(current: RecordedCost): Promise<PoolScaleFigures | undefined> {
  print("\n## Scale of one provider's slot pool item");
  const requests = poolRequests(current);
  if (!requests) {
    print(
      'not measured: no cost section has counted the requests naming the pool item (`npm run bench -- cost scale`)',
    );
    return undefined;
  }
  const perJob = requests.poolRequestsPerJob;
  print(
    `measured (${requests.poolRequestsFrom}, 3 s jobs): requests naming the pool item per job: ${Object.entries(
      perJob,
    )
      .map(([operation, n]) => `${operation} ${fmt(n, 1)}`)
      .join(', ')}`,
  );
  const db = await startDynaliteTables();
  try {
    const pool = new DynamoDbSlotPool(db.documents, db.jobTableName, 'longhaul-http');
    const key = slotPoolKey('longhaul-http');
    const size = async () => {
      const { Item } = await db.documents.send(
        new GetCommand({ TableName: db.jobTableName, Key: key, ConsistentRead: true }),
      );
      return Item ? itemBytes(Item) : 0;
    };
    const clear = () => db.documents.send(new DeleteCommand({ TableName: db.jobTableName, Key: key }));
    const rows: PoolScaleRow[] = [];
    print(
      '| tenants | pool item, each tenant holding a slot | pool item, 10 held, every tenant waiting | jobs/s the item sustains by write units | by read units |',
    );
    print('|---:|---:|---:|---:|---:|');
    for (const tenants of TENANT_COUNTS) {
      await clear();
      for (let n = 0; n < tenants; n++) {
        await pool.acquire(holder(n), tenants, {
          tenant: tenantName(n),
          pass: { expected: undefined, next: n + 1, floor: 0 },
        });
      }
      const holdingBytes = await size();
      // The same tenants waiting: their passes stay, their slots are given back, ten are held.
      for (let n = HELD_WHILE_WAITING; n < tenants; n++) await pool.giveBack(holder(n), tenantName(n));
      const waitingBytes = await size();
      const bytes = Math.max(holdingBytes, waitingBytes);
      const writeUnits =
        ((perJob.UpdateItem ?? 0) + 2 * (perJob.TransactWriteItems ?? 0)) * Math.ceil(bytes / 1024);
      const readUnits = (perJob.GetItem ?? 0) * Math.ceil(bytes / 4096);
      const row: PoolScaleRow = {
        tenants,
        holdingBytes,
        waitingBytes,
        jobsPerSecondByWrites: Math.floor(PARTITION_WRITE_UNITS / writeUnits),
        jobsPerSecondByReads: Math.floor(PARTITION_READ_UNITS / readUnits),
      };
      rows.push(row);
      print(
        `| ${tenants} | ${holdingBytes} B | ${waitingBytes} B | ${row.jobsPerSecondByWrites} | ${row.jobsPerSecondByReads} |`,
      );
    }
    print(
      'computed: one partition serves the item (1,000 write and 3,000 read units a second); a write takes 1 unit ' +
        'per KB of the item, a transaction 2, a consistent read 1 per 4 KB. Failed conditions and conflicts spend ' +
        'units too and are in the counts above only as far as the cost run met them.',
    );
    return { ...requests, rows };
  } finally {
    await db.stop();
  }
}
