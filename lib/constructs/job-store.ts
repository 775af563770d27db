import { RemovalPolicy } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { apiKeyTable, jobTable } from '../../config/layout';
import { layoutTable } from './layout-table';

export interface JobStoreProps {
  /**
   * What happens to the tables when they leave the stack. Jobs and API keys are
   * the system's durable state, so anything but RETAIN needs a deliberate choice.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The durable job state: the job table (each job item is also its idempotency
 * record) and the API key table, both laid out from config/layout.ts so the
 * stack, the local stack and the handlers agree on keys and indexes.
 *
 * Both tables are on-demand, with point-in-time recovery, deletion protection and
 * encryption at rest under the AWS-managed key `alias/aws/dynamodb`: unlike the
 * default AWS-owned key, its use is visible in CloudTrail, and unlike a
 * customer-managed key it cannot be disabled or scheduled for deletion by mistake
 * (which would make every job unreadable) and needs no extra grants for each handler.
 */
export class JobStore extends Construct {
  /** Jobs, one item per job, with the `byTenant`, `byTenantStatus` and `active` indexes. */
  public readonly jobTable: Table;
  /** API keys by SHA-256 hash (`keyHash`); never the keys themselves. */
  public readonly apiKeyTable: Table;

  constructor(scope: Construct, id: string, props: JobStoreProps = {}) {
    super(scope, id);
    const options = { removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN, deletionProtection: true };
    this.jobTable = layoutTable(this, 'JobTable', jobTable, options);
    this.apiKeyTable = layoutTable(this, 'ApiKeyTable', apiKeyTable, options);
  }
}
