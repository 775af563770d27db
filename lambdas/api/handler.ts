import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';

// Placeholder until the intake routes land; the signature is the contract with the gateway.
export async function handler(
  _event: APIGatewayProxyEvent,
  _context: Context,
): Promise<APIGatewayProxyResult> {
  return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{"status":"ok"}' };
}
