import type { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import type { Projection, TableLayout } from '../../config/layout';

const projections: Record<Projection, ProjectionType> = {
  ALL: ProjectionType.ALL,
  KEYS_ONLY: ProjectionType.KEYS_ONLY,
};

export interface LayoutTableOptions {
  /** What happens to the table when it leaves the stack. */
  readonly removalPolicy: RemovalPolicy;
  /** Whether DynamoDB refuses to delete the table until this is turned off. */
  readonly deletionProtection: boolean;
}

/**
 * A table laid out from config/layout.ts (keys, indexes, TTL), on demand, with
 * point-in-time recovery and encryption at rest under the AWS-managed key
 * `alias/aws/dynamodb`: its use shows in CloudTrail, it cannot be disabled by
 * mistake, and handlers need no key grants for it.
 */
export function layoutTable(
  scope: Construct,
  id: string,
  layout: TableLayout,
  options: LayoutTableOptions,
): Table {
  const table = new Table(scope, id, {
    partitionKey: { name: layout.partitionKey, type: AttributeType.STRING },
    sortKey: layout.sortKey ? { name: layout.sortKey, type: AttributeType.STRING } : undefined,
    timeToLiveAttribute: layout.timeToLiveAttribute,
    billingMode: BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: TableEncryption.AWS_MANAGED,
    deletionProtection: options.deletionProtection,
    removalPolicy: options.removalPolicy,
  });
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
