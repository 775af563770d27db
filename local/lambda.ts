import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { LOCAL_REGION } from './handler-env';
import {
  admitInvocation,
  checkReservations,
  installInvokeStore,
  SYNC_REQUEST_PAYLOAD_BYTES,
  tooLarge,
} from './lambda-service';
import type { LocalTemplate } from './template';
import { usage } from './usage';

/**
 * Invoking a handler the way the Lambda service does, as far as a handler can
 * tell: a JSON copy of the event (never an object shared with the caller), a
 * context with a deadline, and a JSON copy of the result. Unlike Lambda,
 * invocations share one process and may overlap, and a timed-out invocation
 * keeps running in the background.
 */

export const LOCAL_ACCOUNT_ID = '000000000000';

export interface LocalFunction {
  readonly name: string;
  /** The function's service name in the template (`api`, `dispatch`, …); its IAM role is looked up by it. */
  readonly service: string;
  readonly timeoutMs: number;
  readonly memoryMb: number;
  /** `ReservedConcurrentExecutions`: invocations beyond it are throttled. Absent: none reserved. */
  readonly reservedConcurrency?: number;
}

/** The functions the local stack invokes, by their service name in the template. */
export const FUNCTION_SERVICES = [
  'api',
  'authorizer',
  'provider-events',
  'dispatch',
  'workflow',
  'stream',
  'reconcile',
  'fire',
  'compute',
] as const;
export type FunctionService = (typeof FUNCTION_SERVICES)[number];

/** A local function's name: its ARN names it so, and the local Step Functions invokes it by it. */
export const localFunctionName = (service: string): string => `longhaul-${service}`;

const fromTemplate = new Map<FunctionService, LocalFunction>();

/**
 * Takes each function's timeout and memory from the template; the local stack
 * calls it once, before anything is invoked. One process runs one local stack,
 * so they are kept for the process, where {@link localFunctions} reads them.
 */
export function useTemplateFunctions(template: LocalTemplate): void {
  // Before anything runs, as a deployment would fail before anything was created.
  checkReservations(template.functions());
  for (const service of FUNCTION_SERVICES) {
    const fn = template.function(service);
    fromTemplate.set(service, {
      name: localFunctionName(service),
      service,
      timeoutMs: fn.timeoutSeconds * 1000,
      memoryMb: fn.memoryMb,
      ...(fn.reservedConcurrency === undefined ? {} : { reservedConcurrency: fn.reservedConcurrency }),
    });
  }
}

function templateFunction(service: FunctionService): LocalFunction {
  const fn = fromTemplate.get(service);
  if (!fn) throw new Error(`the ${service} function is invoked before the local stack read its template`);
  return fn;
}

/** The functions the local stack invokes, as the template deploys them (see {@link useTemplateFunctions}). */
export const localFunctions: Readonly<Record<FunctionService, LocalFunction>> = Object.freeze(
  Object.defineProperties(
    {},
    Object.fromEntries(
      FUNCTION_SERVICES.map((service) => [
        service,
        { enumerable: true, get: () => templateFunction(service) },
      ]),
    ),
  ) as Record<FunctionService, LocalFunction>,
);

export function functionArn(fn: Pick<LocalFunction, 'name'>): string {
  return `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:function:${fn.name}`;
}

export class InvocationTimeoutError extends Error {
  constructor(readonly functionName: string) {
    super(`${functionName} timed out`);
    this.name = 'InvocationTimeoutError';
  }
}

export function lambdaContext(
  fn: LocalFunction,
  deadline: number,
  requestId: string = randomUUID(),
): Context {
  const unsupported = () => {
    throw new Error('callback-style completion is not supported on nodejs24.x');
  };
  const day = new Date().toISOString().slice(0, 10).replaceAll('-', '/');
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: fn.name,
    functionVersion: '$LATEST',
    invokedFunctionArn: functionArn(fn),
    memoryLimitInMB: String(fn.memoryMb),
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${fn.name}`,
    logStreamName: `${day}/[$LATEST]local`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}

/** The invocation that code runs in: which function, with which event. */
export interface Invocation {
  readonly fn: LocalFunction;
  readonly event: unknown;
  /** The X-Ray trace header the invocation runs under; its Lineage counts the invocations of its chain. */
  readonly traceHeader?: string;
  /** The context's `awsRequestId`. */
  readonly requestId?: string;
  /** What the invocation's code keeps in the runtime's invoke store (./lambda-service.ts). */
  readonly values?: Map<symbol, unknown>;
}

const invocations = new AsyncLocalStorage<Invocation>();
installInvokeStore(() => invocations.getStore());

/**
 * The invocation the caller runs in, if any. Handlers share this process and
 * its stdout, so this is how local tools (the ops view's metric capture) tell
 * which invocation wrote a line.
 */
export function currentInvocation(): Invocation | undefined {
  return invocations.getStore();
}

const jsonCopy = <T>(value: T): T => (value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T));

export interface InvokeOptions {
  /** The trace header the event arrived with, as an event source mapping passes it on. */
  readonly traceHeader?: string;
}

/**
 * A synchronous invocation. Before the function runs, the service may refuse
 * it: `RequestEntityTooLargeException` for an event over 6 MB of JSON, and
 * `TooManyRequestsException` when the function's reserved concurrency is taken or the throttling fault
 * picks it (./lambda-service.ts).
 */
export async function invoke<E, R>(
  fn: LocalFunction,
  handler: (event: E, context: Context) => Promise<R>,
  event: E,
  options: InvokeOptions = {},
): Promise<R> {
  const payload = JSON.stringify(event) ?? '';
  const bytes = Buffer.byteLength(payload);
  if (bytes > SYNC_REQUEST_PAYLOAD_BYTES) throw tooLarge(fn.name, bytes);
  const release = admitInvocation(fn);
  const started = performance.now();
  const deadline = Date.now() + fn.timeoutMs;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new InvocationTimeoutError(fn.name)), fn.timeoutMs);
  });
  try {
    const copy = (payload === '' ? undefined : JSON.parse(payload)) as E;
    const requestId = randomUUID();
    const invocation = { fn, event: copy, traceHeader: options.traceHeader, requestId, values: new Map() };
    const run = invocations.run(invocation, () => handler(copy, lambdaContext(fn, deadline, requestId)));
    const result = await Promise.race([run, timeout]);
    return jsonCopy(result);
  } finally {
    // A timed-out invocation's environment is stopped in Lambda: its concurrency is free again.
    release();
    clearTimeout(timer);
    usage.invocation(fn, performance.now() - started);
  }
}
