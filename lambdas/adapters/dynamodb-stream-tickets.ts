import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { jobTable } from '../../config/layout';
import type { StreamTicketRecord, StreamTicketStore } from '../domain/stream-tickets';

const TICKET_PREFIX = 'TICKET#';
const TICKET_SORT_KEY = 'TICKET';

/**
 * Stream tickets as items of the job table (`pk` = `TICKET#<hash>`), removed
 * by the table's TTL. Their attributes are named so that no index of the
 * table (tenant listings, active jobs) ever picks them up.
 */
export class DynamoDbStreamTickets implements StreamTicketStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async put(record: StreamTicketRecord): Promise<void> {
    await this.client.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          [jobTable.partitionKey]: `${TICKET_PREFIX}${record.ticketHash}`,
          [jobTable.sortKey]: TICKET_SORT_KEY,
          ticketTenantId: record.tenantId,
          ticketJobId: record.jobId,
          [jobTable.timeToLiveAttribute]: record.expiresAt,
        },
      }),
    );
  }

  async get(ticketHash: string): Promise<StreamTicketRecord | undefined> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: {
          [jobTable.partitionKey]: `${TICKET_PREFIX}${ticketHash}`,
          [jobTable.sortKey]: TICKET_SORT_KEY,
        },
        ConsistentRead: true,
      }),
    );
    if (!Item) return undefined;
    return {
      ticketHash,
      tenantId: Item.ticketTenantId as string,
      jobId: Item.ticketJobId as string,
      expiresAt: Item[jobTable.timeToLiveAttribute] as number,
    };
  }
}
