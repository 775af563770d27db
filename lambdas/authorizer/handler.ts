import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent, Context } from 'aws-lambda';
import { API_KEY_HEADER, AUTHORIZER_DENIAL, type AuthorizerContext } from '../../config/layout';
import { header } from '../api/http';
import { hashApiKey } from '../shared/api-keys';
import { instrument, logger } from '../shared/observability';
import { apiKeyStore } from '../shared/ports/api-key-store';

/**
 * REQUEST authorizer over hashed API keys. The gateway caches the decision per
 * key, so the policy covers the whole API, not just the route that was called.
 * Throwing AUTHORIZER_DENIAL is how a Lambda authorizer asks the gateway for a 401.
 */
export const handler = instrument(
  async (event: APIGatewayRequestAuthorizerEvent, _context: Context): Promise<APIGatewayAuthorizerResult> => {
    const apiKey = header({ headers: event.headers ?? {} }, API_KEY_HEADER);
    if (!apiKey) throw new Error(AUTHORIZER_DENIAL);
    const record = await apiKeyStore().findByHash(hashApiKey(apiKey));
    if (!record || record.disabled) {
      logger.info('api key refused');
      throw new Error(AUTHORIZER_DENIAL);
    }
    const context: AuthorizerContext = { tenantId: record.tenantId, role: record.role };
    return {
      principalId: record.tenantId,
      policyDocument: {
        Version: '2012-10-17',
        Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: wholeApi(event.methodArn) }],
      },
      context: { ...context },
      ...(record.usageKey ? { usageIdentifierKey: record.usageKey } : {}),
    };
  },
);

/** `arn:…:execute-api:region:account:api/stage/METHOD/path` → every method and path of that stage. */
function wholeApi(methodArn: string): string {
  const [arn = methodArn, stage = '*'] = methodArn.split('/');
  return `${arn}/${stage}/*`;
}
