import type { APIGatewayProxyResult, Context } from 'aws-lambda';
import { z } from 'zod';
import { JOB_ID_PATTERN } from '../domain/idempotency';
import { hashApiKey } from '../shared/api-keys';
import { apiKeyStore, jobStore, subscriptions } from '../shared/aws';
import { instrument, logger } from '../shared/observability';

/** How long a subscription lives if its disconnect is never seen (API Gateway closes connections after 2 h). */
const SUBSCRIPTION_TTL_SECONDS = 2 * 60 * 60;

/** The parts of an API Gateway WebSocket event this handler reads. */
interface WebSocketEvent {
  readonly requestContext: { readonly routeKey: string; readonly connectionId: string };
  readonly queryStringParameters?: Record<string, string | undefined> | null;
}

const connectQuery = z.object({
  jobId: z.string().regex(JOB_ID_PATTERN),
  apiKey: z.string().min(1).max(512),
});

const refuse = (statusCode: number, reason: string): APIGatewayProxyResult => {
  logger.info('stream connection refused', { reason });
  return { statusCode, body: reason };
};

/**
 * The live-progress WebSocket: `$connect` admits a client to one job's
 * updates if its API key belongs to the job's tenant (or is the admin key),
 * `$disconnect` forgets it. Messages from clients are ignored.
 */
export const handler = instrument(
  'stream',
  async (event: WebSocketEvent, _context: Context): Promise<APIGatewayProxyResult> => {
    const { routeKey, connectionId } = event.requestContext;
    if (routeKey === '$disconnect') {
      await subscriptions().remove(connectionId);
      return { statusCode: 200, body: '' };
    }
    if (routeKey !== '$connect') return { statusCode: 200, body: '' };

    const query = connectQuery.safeParse(event.queryStringParameters ?? {});
    if (!query.success) return refuse(400, 'jobId and apiKey query parameters are required');
    const key = await apiKeyStore().findByHash(hashApiKey(query.data.apiKey));
    if (!key || key.disabled) return refuse(401, 'unknown API key');
    const job = await jobStore().get(query.data.jobId);
    // Another tenant's job is indistinguishable from a missing one.
    if (!job || (key.role !== 'admin' && job.tenantId !== key.tenantId)) return refuse(404, 'no such job');
    logger.appendKeys({ jobId: job.id, tenantId: job.tenantId });
    const now = new Date();
    await subscriptions().add({
      connectionId,
      jobId: job.id,
      tenantId: job.tenantId,
      connectedAt: now.toISOString(),
      expiresAt: Math.floor(now.getTime() / 1000) + SUBSCRIPTION_TTL_SECONDS,
    });
    logger.info('stream connected');
    return { statusCode: 200, body: '' };
  },
);
