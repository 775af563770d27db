import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  APIGatewayProxyResult,
  APIGatewayRequestAuthorizerEvent,
  Context,
  SQSBatchResponse,
  SQSEvent,
} from 'aws-lambda';
import type { WebSocketEvent } from './websocket-api/events';

export type ApiHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
/** Providers' webhooks through the function's URL (payload format 2.0). */
export type ProviderEventsHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyResult>;
export type AuthorizerHandler = (
  event: APIGatewayRequestAuthorizerEvent,
  context: Context,
) => Promise<APIGatewayAuthorizerResult>;
export type DispatchHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
/** Every workflow step; the state machine names the step in the payload. */
export type WorkflowHandler = (event: unknown, context: Context) => Promise<unknown>;
/** Every route of the WebSocket API: `$connect`, `$disconnect` and `$default`. */
export type StreamHandler = (event: WebSocketEvent, context: Context) => Promise<APIGatewayProxyResult>;
/** One reconciliation pass per invocation; the schedule's event carries nothing it reads. */
export type ReconcileHandler = (event: unknown, context: Context) => Promise<unknown>;

/** One firing of a tenant's schedule: the Input its Scheduler schedule carries. */
export type FireHandler = (event: unknown, context: Context) => Promise<unknown>;

/** One compute step of audio.publish, or the collection of one a Fargate task ran. */
export type ComputeHandler = (event: unknown, context: Context) => Promise<unknown>;

export interface LocalHandlers {
  readonly api: ApiHandler;
  readonly authorizer: AuthorizerHandler;
  readonly providerEvents: ProviderEventsHandler;
  readonly dispatch: DispatchHandler;
  readonly workflow: WorkflowHandler;
  readonly stream: StreamHandler;
  readonly reconcile: ReconcileHandler;
  readonly fire: FireHandler;
  readonly compute: ComputeHandler;
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
  const [api, authorizer, providerEvents, dispatch, workflow, stream, reconcile, fire, compute] =
    await Promise.all([
      load<ApiHandler>('api', import('../lambdas/api/handler.js')),
      load<AuthorizerHandler>('authorizer', import('../lambdas/authorizer/handler.js')),
      load<ProviderEventsHandler>('provider-events', import('../lambdas/provider-events/handler.js')),
      load<DispatchHandler>('dispatch', import('../lambdas/dispatch/handler.js')),
      load<WorkflowHandler>('workflow', import('../lambdas/workflow/handler.js')),
      load<StreamHandler>('stream', import('../lambdas/stream/handler.js')),
      load<ReconcileHandler>('reconcile', import('../lambdas/reconcile/handler.js')),
      load<FireHandler>('fire', import('../lambdas/fire/handler.js')),
      // A container-image function in AWS; its handler is the same source, and ffmpeg the npm packages' build.
      load<ComputeHandler>('compute', import('../lambdas/compute/handler.js')),
    ]);
  return { api, authorizer, providerEvents, dispatch, workflow, stream, reconcile, fire, compute };
}

/**
 * Another copy of the dispatch handler, as another Lambda execution
 * environment would load it. Lambda runs one invocation at a time per
 * environment, so a handler may keep per-invocation state at module level
 * (the dispatch handler's Powertools BatchProcessor does); invocations that
 * run at once must each have their own copy. Only the handler module itself is
 * evaluated again: what it imports (SDK clients, settings, Powertools
 * instances) stays shared, as all of that is safe to share.
 */
export function loadDispatchEnvironment(): DispatchHandler {
  const file = require.resolve('../lambdas/dispatch/handler.js');
  const loaded = require.cache[file];
  delete require.cache[file];
  try {
    return (require(file) as { handler: DispatchHandler }).handler;
  } finally {
    if (loaded) require.cache[file] = loaded;
    else delete require.cache[file];
  }
}
