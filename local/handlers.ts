import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayRequestAuthorizerEvent,
  Context,
} from 'aws-lambda';

export type ApiHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
export type AuthorizerHandler = (
  event: APIGatewayRequestAuthorizerEvent,
  context: Context,
) => Promise<APIGatewayAuthorizerResult>;

export interface LocalHandlers {
  readonly api: ApiHandler;
  readonly authorizer: AuthorizerHandler;
}

/**
 * Loads the handler modules, which read their environment once when they
 * load (as in a Lambda cold start): call it only after the handler
 * environment is in place, and never import those modules statically here.
 */
export async function loadHandlers(): Promise<LocalHandlers> {
  const load = async <T>(name: string, module: Promise<{ handler: T }>): Promise<T> => {
    try {
      return (await module).handler;
    } catch (error) {
      throw new Error(`the ${name} handler failed to load: ${(error as Error).message}`, { cause: error });
    }
  };
  const [api, authorizer] = await Promise.all([
    load<ApiHandler>('api', import('../lambdas/api/handler.js')),
    load<AuthorizerHandler>('authorizer', import('../lambdas/authorizer/handler.js')),
  ]);
  return { api, authorizer };
}
