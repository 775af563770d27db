import {
  type ApiGatewayManagementApiClient,
  GoneException,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import type { LiveChannel, LiveMessage } from '../domain/ports';
import type { DynamoDbSubscriptions } from './dynamodb-subscriptions';

/** How long a job's subscriber list is reused: ticks come ten a second, subscriptions change rarely. */
const SUBSCRIBERS_TTL_MS = 1000;
/** A job nobody watches is looked up again sooner, so a new watcher misses little. */
const NO_SUBSCRIBERS_TTL_MS = 250;

/**
 * Pushes live messages over the API Gateway WebSocket API. Subscriber lists
 * are read (never written) and cached briefly, so a tick costs no storage
 * write; a connection that is gone is removed when a push finds it gone.
 */
export class ApiGatewayLiveChannel implements LiveChannel {
  private readonly cache = new Map<string, { connections: string[]; until: number }>();

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
      connections.map(async (connectionId) => {
        try {
          await this.client.send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: data }));
        } catch (error) {
          if (!(error instanceof GoneException)) throw error;
          await this.subscriptions.remove(connectionId);
          const cached = this.cache.get(message.jobId);
          if (cached) cached.connections = cached.connections.filter((id) => id !== connectionId);
        }
      }),
    );
  }

  private async subscribers(jobId: string): Promise<string[]> {
    const cached = this.cache.get(jobId);
    const now = this.now();
    if (cached && cached.until > now) return cached.connections;
    const connections = await this.subscriptions.connectionsOf(jobId);
    this.cache.set(jobId, {
      connections,
      until: now + (connections.length ? SUBSCRIBERS_TTL_MS : NO_SUBSCRIBERS_TTL_MS),
    });
    if (this.cache.size > 10_000) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    return connections;
  }
}
