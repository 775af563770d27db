import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent, Context } from 'aws-lambda';

// Placeholder until the key lookup lands; the signature is the contract with the gateway.
export async function handler(
  _event: APIGatewayRequestAuthorizerEvent,
  _context: Context,
): Promise<APIGatewayAuthorizerResult> {
  throw new Error('Unauthorized');
}
