import type { APIGatewayProxyResult, Context } from 'aws-lambda';
import * as z from 'zod';
import { JOB_ID_PATTERN } from '../domain/idempotency';
import { redeemStreamTicket } from '../domain/stream-tickets';
import { hashApiKey } from '../shared/api-keys';
import { instrument, logger } from '../shared/observability';
import { apiKeyStore } from '../shared/ports/api-key-store';
import { jobStore } from '../shared/ports/job-store';
import { streamTickets } from '../shared/ports/stream-tickets';
import { subscriptions } from '../shared/ports/subscriptions';

/** How long a subscription lives if its disconnect is never seen (API Gateway closes connections after 2 h). */
const SUBSCRIPTION_TTL_SECONDS = 2 * 60 * 60;

/** The parts of an API Gateway WebSocket event this handler reads. */
interface WebSocketEvent {
  readonly requestContext: { readonly routeKey: string; readonly connectionId: string };
  readonly queryStringParameters?: Record<string, string | undefined> | null;
}

/** Preferred: a stream ticket from POST /v1/jobs/{id}/stream-ticket. */
const ticketQuery = z.object({ ticket: z.string().min(1).max(512) });
/** Kept for compatibility: a tenant's API key in the URL (never the admin key). */
const keyQuery = z.object({
  jobId: z.string().regex(JOB_ID_PATTERN),
  apiKey: z.string().min(1).max(512),
});

const refuse = (statusCode: number, reason: string): APIGatewayProxyResult => {
  logger.info('stream connection refused', { reason });
  return { statusCode, body: reason };
};

/**
 * The live-progress WebSocket: `$connect` admits a client to one job's
 * updates if it brings a live stream ticket for that job, or (kept for
 * compatibility) a tenant API key of the job's tenant; the admin key is
 * refused, so the one key that opens every tenant never travels in a URL.
 * `$disconnect` forgets a connection. Client messages (keep-alive pings)
 * are answered by nothing: receiving them is what keeps the connection open.
 */
export const handler = instrument(
  async (event: WebSocketEvent, _context: Context): Promise<APIGatewayProxyResult> => {
    const { routeKey, connectionId } = event.requestContext;
    if (routeKey === '$disconnect') {
      await subscriptions().remove(connectionId);
      return { statusCode: 200, body: '' };
    }
    if (routeKey !== '$connect') return { statusCode: 200, body: '' };

    const caller = await admit(event.queryStringParameters ?? {});
    if ('statusCode' in caller) return caller;
    const job = await jobStore().get(caller.jobId);
    // Another tenant's job is indistinguishable from a missing one.
    if (!job || job.tenantId !== caller.tenantId) return refuse(404, 'no such job');
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

/** The tenant and job a handshake's query grants, or the refusal. */
async function admit(
  parameters: Record<string, string | undefined>,
): Promise<{ readonly tenantId: string; readonly jobId: string } | APIGatewayProxyResult> {
  const byTicket = ticketQuery.safeParse(parameters);
  if (byTicket.success) {
    const grant = await redeemStreamTicket(
      { tickets: streamTickets(), now: () => new Date() },
      byTicket.data.ticket,
    );
    return grant ?? refuse(401, 'unknown or expired ticket');
  }
  const byKey = keyQuery.safeParse(parameters);
  if (!byKey.success) return refuse(400, 'a ticket query parameter (or jobId and apiKey) is required');
  const key = await apiKeyStore().findByHash(hashApiKey(byKey.data.apiKey));
  if (!key || key.disabled) return refuse(401, 'unknown API key');
  if (key.role === 'admin')
    return refuse(403, 'the admin key is not accepted on the stream; use a stream ticket');
  return { tenantId: key.tenantId, jobId: byKey.data.jobId };
}
