import type { APIGatewayProxyEventV2, APIGatewayProxyResult, Context } from 'aws-lambda';
import { providerWebhookRoutes } from '../../config/layout';
import { problem } from '../../config/problems';
import type { ProviderName } from '../../config/providers';
import { problemResult } from '../api/http';
import { instrument } from '../shared/observability';
import { answerProviderWebhook } from '../shared/provider-webhooks';

/**
 * Providers' webhooks through the function's URL (payload format 2.0), off
 * the REST API: progress ticks come about ten a second per running job, and
 * a REST request costs more than the invocation it leads to. The URL is open
 * (auth type NONE) because every request is verified by its provider's
 * adapter before anything of it is read, as on the REST API's routes; each
 * provider posts under its own route's path, which says whose signature to
 * check.
 */

const providerOfPath = new Map<string, ProviderName>(
  providerWebhookRoutes.map((route) => [route.path, route.provider]),
);

export const handler = instrument(
  async (event: APIGatewayProxyEventV2, _context: Context): Promise<APIGatewayProxyResult> => {
    const { method } = event.requestContext.http;
    const provider = method === 'POST' ? providerOfPath.get(event.rawPath) : undefined;
    if (!provider) {
      return problemResult({
        ...problem('not-found', `No provider posts its events to ${method} ${event.rawPath}.`),
        instance: `urn:longhaul:request:${event.requestContext.requestId}`,
      });
    }
    return answerProviderWebhook(
      provider,
      {
        headers: Object.fromEntries(
          Object.entries(event.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
        ),
        query: lastValues(event.rawQueryString),
        body:
          event.body === undefined
            ? Buffer.alloc(0)
            : Buffer.from(event.body, event.isBase64Encoded ? 'base64' : 'utf8'),
      },
      event.requestContext.requestId,
    );
  },
);

/** The query's parameters, each with its last value, as the REST API's `queryStringParameters` has them. */
function lastValues(rawQueryString: string): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(rawQueryString));
}
