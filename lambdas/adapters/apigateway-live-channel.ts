import {
  type ApiGatewayManagementApiClient,
  GoneException,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import type { LiveChannel, LiveMessage } from '../domain/ports';
import type { DynamoDbSubscriptions, Subscriber } from './dynamodb-subscriptions';

/**
 * How long a job's subscriber list is reused, watched or not: ticks come ten a
 * second, subscriptions change rarely, and a lookup is a read per job per
 * interval (a minute's job nobody watches costs 60, not 240). A new watcher's
 * ticks start within the interval; its first status and stored progress it
 * reads from the job.
 */
const SUBSCRIBERS_TTL_MS = 1000;
/**
 * PostToConnection answers 410 Gone until the connection's `$connect` has
 * returned, and the subscription is written during `$connect`: a connection
 * younger than this that answers Gone may still be connecting, so it is kept.
 * A few seconds cover a `$connect` with a cold start; a connection that is
 * really gone is removed by its `$disconnect`, or by the next push after this.
 */
export const YOUNG_CONNECTION_MS = 10_000;

/**
 * Pushes live messages over the API Gateway WebSocket API. Subscriber lists
 * are read (never written) and cached briefly, so a tick costs no storage
 * write; a connection that is gone is removed when a push finds it gone,
 * unless it is young enough to be still connecting.
 */
export class ApiGatewayLiveChannel implements LiveChannel {
  private readonly cache = new Map<string, { connections: Subscriber[]; until: number }>();

  constructor(
    private readonly client: ApiGatewayManagementApiClient,
    private readonly subscriptions: DynamoDbSubscriptions,
    private readonly now: () => number = Date.now,
  ) {}

  async publish(message: LiveMessage): Promise<void> {
    const connections = await this.subscribers(message.jobId);
    if (connections.length === 0) return;
    const data = new TextEncoder().encode(JSON.stringify(message));
    await Promise.all(
      connections.map(async ({ connectionId }) => {
        try {
          await this.client.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: data }));
        } catch (error) {
          if (!(error instanceof GoneException)) throw error;
          const cutoff = new Date(this.now() - YOUNG_CONNECTION_MS).toISOString();
          // The table decides, in one conditional write, so no environment removes a young one.
          if (!(await this.subscriptions.removeIfConnectedBefore(connectionId, cutoff))) return;
          const cached = this.cache.get(message.jobId);
          if (cached) {
            cached.connections = cached.connections.filter((other) => other.connectionId !== connectionId);
          }
        }
      }),
    );
  }

  private async subscribers(jobId: string): Promise<Subscriber[]> {
    const cached = this.cache.get(jobId);
    const now = this.now();
    if (cached && cached.until > now) return cached.connections;
    const connections = await this.subscriptions.connectionsOf(jobId);
    this.cache.set(jobId, {
      connections,
      until: now + SUBSCRIBERS_TTL_MS,
    });
    if (this.cache.size > 10_000) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    return connections;
  }
}
