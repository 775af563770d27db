import { RemovalPolicy } from 'aws-cdk-lib';
import {
  AttributeType,
  BillingMode,
  ProjectionType,
  Table,
  TableEncryption,
  type TableProps,
} from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { apiKeyTable, jobTable, type Projection, type TableLayout } from '../../config/layout';

export interface JobStoreProps {
  /**
   * What happens to the tables when they leave the stack. Jobs and API keys are
   * the system's durable state, so anything but RETAIN needs a deliberate choice.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

const projections: Record<Projection, ProjectionType> = {
  ALL: ProjectionType.ALL,
  KEYS_ONLY: ProjectionType.KEYS_ONLY,
};

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
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    this.jobTable = this.table('JobTable', jobTable, removalPolicy);
    this.apiKeyTable = this.table('ApiKeyTable', apiKeyTable, removalPolicy);
  }

  private table(id: string, layout: TableLayout, removalPolicy: RemovalPolicy): Table {
    const tableProps: TableProps = {
      partitionKey: { name: layout.partitionKey, type: AttributeType.STRING },
      sortKey: layout.sortKey ? { name: layout.sortKey, type: AttributeType.STRING } : undefined,
      timeToLiveAttribute: layout.timeToLiveAttribute,
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.AWS_MANAGED,
      deletionProtection: true,
      removalPolicy,
    };
    const table = new Table(this, id, tableProps);
    for (const index of layout.indexes) {
      table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
        sortKey: { name: index.sortKey, type: AttributeType.STRING },
        projectionType: projections[index.projection],
      });
    }
    return table;
  }
}
