import { createHash, randomBytes } from 'node:crypto';
import { LAMBDA_SYNC_REQUEST_BYTES } from '../config/settings';

/**
 * What the Lambda service itself does around an invocation, before and apart
 * from the function's code, that the local stack emulates as strictly as AWS:
 * the synchronous request payload limit, throttling (a function's reserved
 * concurrency, read from the template, and as a fault, switched on with
 * LONGHAUL_FAULT_THROTTLE), and the X-Ray trace header whose `Lineage`
 * counts the invocations of a chain for recursive loop detection.
 */

export const SYNC_REQUEST_PAYLOAD_BYTES = LAMBDA_SYNC_REQUEST_BYTES;

/** An error of the Lambda service, named as its Invoke API names it; the function never ran. */
export class LambdaServiceError extends Error {
  constructor(
    name: 'TooManyRequestsException' | 'RequestEntityTooLargeException',
    message: string,
    readonly statusCode: number,
  ) {
    super(message);
    this.name = name;
  }
}

export const isLambdaServiceError = (error: unknown): error is LambdaServiceError =>
  error instanceof LambdaServiceError;

export function tooLarge(functionName: string, bytes: number): LambdaServiceError {
  return new LambdaServiceError(
    'RequestEntityTooLargeException',
    `${functionName}: ${bytes} byte payload is too large for the RequestResponse invocation type (limit ${SYNC_REQUEST_PAYLOAD_BYTES} bytes)`,
    413,
  );
}

/**
 * Throttling as a fault: the share of invocations of the named functions that
 * the service refuses with TooManyRequestsException, as it does when a
 * function or the account is out of concurrency (small on new accounts).
 */
export interface ThrottleFault {
  /** 0..1 */
  readonly share: number;
  readonly functions: ReadonlySet<string>;
  readonly random?: () => number;
}

let throttle: ThrottleFault | undefined;

export function setThrottleFault(fault: ThrottleFault | undefined): void {
  throttle = fault;
}

/** Lambda's default concurrency quota of an account in a Region, which the local account has. */
export const ACCOUNT_CONCURRENCY = 1000;
/** What Lambda keeps of the account's concurrency for the functions that reserve none. */
export const UNRESERVED_CONCURRENCY_MINIMUM = 100;

/**
 * Refuses reservations (`ReservedConcurrentExecutions`) that leave the account less than its
 * unreserved minimum, as Lambda refuses them and `cdk deploy` then fails: with the error Lambda answers.
 */
export function checkReservations(
  functions: readonly { readonly logicalId: string; readonly reservedConcurrency?: number }[],
  accountConcurrency: number = ACCOUNT_CONCURRENCY,
): void {
  let reserved = 0;
  for (const fn of functions) {
    if (fn.reservedConcurrency === undefined) continue;
    reserved += fn.reservedConcurrency;
    if (accountConcurrency - reserved < UNRESERVED_CONCURRENCY_MINIMUM) {
      throw new Error(
        `${fn.logicalId}: InvalidParameterValueException: Specified ReservedConcurrentExecutions for function decreases account's UnreservedConcurrentExecution below its minimum value of [${UNRESERVED_CONCURRENCY_MINIMUM}]. (account concurrency ${accountConcurrency}, reserved ${reserved})`,
      );
    }
  }
}

/** The invocations of each function running now, counted against its reservation. */
const running = new Map<string, number>();

/**
 * Admits an invocation of `fn`, or throws TooManyRequestsException (the function never runs): for the
 * throttling fault, or for a function whose reserved concurrency its running invocations take up, as
 * Lambda throttles it. Returns what ends the invocation's hold on the function's concurrency.
 */
export function admitInvocation(fn: {
  readonly name: string;
  readonly reservedConcurrency?: number;
}): () => void {
  const refused = () => new LambdaServiceError('TooManyRequestsException', 'Rate Exceeded.', 429);
  if (
    throttle?.functions.has(fn.name) &&
    throttle.share > 0 &&
    (throttle.random ?? Math.random)() < throttle.share
  ) {
    throw refused();
  }
  const now = running.get(fn.name) ?? 0;
  if (fn.reservedConcurrency !== undefined && now >= fn.reservedConcurrency) throw refused();
  running.set(fn.name, now + 1);
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    const left = (running.get(fn.name) ?? 1) - 1;
    if (left > 0) running.set(fn.name, left);
    else running.delete(fn.name);
  };
}

/** Lambda stops the next invocation of a chain that has already invoked the function this often. */
export const RECURSION_LIMIT = 16;

/** `Lineage=<function hash>:<invocations so far>` inside an X-Ray trace header. */
const LINEAGE = /(?:^|;)\s*Lineage=([0-9a-f]{8}):(\d+)/;

export const lineageHash = (functionName: string): string =>
  createHash('sha256').update(functionName).digest('hex').slice(0, 8);

/** How many times the chain a trace header belongs to has invoked `functionName` so far (0 outside one). */
export function chainDepth(traceHeader: string | undefined, functionName: string): number {
  const match = traceHeader ? LINEAGE.exec(traceHeader) : null;
  if (!match || match[1] !== lineageHash(functionName)) return 0;
  return Number(match[2]);
}

/** The trace header an invocation runs under, the `depth`-th of its chain. */
export function traceHeaderAt(functionName: string, depth: number): string {
  const root = `1-${Math.floor(Date.now() / 1000).toString(16)}-${randomBytes(12).toString('hex')}`;
  return `Root=${root};Parent=${randomBytes(8).toString('hex')};Sampled=0;Lineage=${lineageHash(functionName)}:${depth}`;
}

const X_RAY_TRACE_ID = Symbol.for('_AWS_LAMBDA_X_RAY_TRACE_ID');
const REQUEST_ID = Symbol.for('_AWS_LAMBDA_REQUEST_ID');

/**
 * The Lambda runtime's invoke store (`globalThis.awslambda.InvokeStore`), from
 * which the AWS SDK's recursion detection middleware takes the trace header it
 * sends as `X-Amzn-Trace-Id` on every call made inside an invocation. SQS keeps
 * it with a sent message (`AWSTraceHeader`), so the chain's count travels with
 * the messages a function sends, as in AWS. Backed by the caller's own async
 * context, since local invocations share one process and overlap.
 *
 * Local invocations overlap in one process as they do in a Lambda execution
 * environment that runs several at once (AWS_LAMBDA_MAX_CONCURRENCY, which the
 * local stack sets). There Powertools keeps each invocation's logger context
 * (function name, request id, appended keys), metrics and batch state in this
 * store, so each `values` holds its own invocation's entries: what one
 * invocation sets, another never reads. What module initialization sets
 * (outside any invocation) is kept for the process, as by the runtime's
 * single-invocation store.
 */
export function installInvokeStore(
  current: () =>
    | { traceHeader?: string; requestId?: string; readonly values?: Map<symbol, unknown> }
    | undefined,
): void {
  const global = globalThis as { awslambda?: { InvokeStore?: unknown } };
  global.awslambda ??= {};
  const isProtectedKey = (key: symbol) => key === X_RAY_TRACE_ID || key === REQUEST_ID;
  const initialization = new Map<symbol, unknown>();
  const values = () => current()?.values ?? initialization;
  const get = (key: symbol): unknown => {
    const invocation = current();
    if (key === X_RAY_TRACE_ID) return invocation?.traceHeader;
    if (key === REQUEST_ID) return invocation?.requestId;
    return values().get(key);
  };
  const text = (key: symbol) => get(key) as string | undefined;
  global.awslambda.InvokeStore = {
    get,
    // As the runtime's own store, the request's ids are read-only.
    set: (key: symbol, value: unknown) => {
      if (isProtectedKey(key)) {
        throw new Error(`Cannot modify protected Lambda context field: ${String(key)}`);
      }
      values().set(key, value);
    },
    hasContext: () => current() !== undefined,
    getContext: () => current(),
    run: <T>(_context: unknown, fn: () => T) => fn(),
    isProtectedKey,
    getRequestId: () => text(REQUEST_ID) ?? '-',
    getXRayTraceId: () => text(X_RAY_TRACE_ID),
    getTenantId: () => undefined,
    getTraceparent: () => undefined,
    getTracestate: () => undefined,
    getBaggage: () => undefined,
  };
}
