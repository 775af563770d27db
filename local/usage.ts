/**
 * The billed usage of the services the local stack stands in for itself:
 * Lambda invocations and their billed duration (CloudWatch's AWS/Lambda
 * `Invocations` and `Duration`), and REST API requests (AWS/ApiGateway
 * `Count`). The emulated services keep their own counts: Step Functions in
 * each execution's history, SQS and DynamoDB in the requests they answer.
 * One meter per process, as every local function runs in this one.
 */

export interface FunctionUsage {
  readonly invocations: number;
  /** Each invocation's duration rounded up to the next millisecond, as Lambda bills it. */
  readonly billedMs: number;
  readonly memoryMb: number;
  readonly gbSeconds: number;
}

export interface Usage {
  /** When metering began: every figure counts from here. */
  readonly since: string;
  readonly lambda: Readonly<Record<string, FunctionUsage>>;
  /** Requests that reached the REST API's routes (the local ops routes are not part of the API). */
  readonly restApiRequests: number;
}

class UsageMeter {
  private since = new Date();
  private readonly functions = new Map<string, { invocations: number; billedMs: number; memoryMb: number }>();
  private restApiRequests = 0;

  invocation(fn: { readonly name: string; readonly memoryMb: number }, durationMs: number): void {
    const entry = this.functions.get(fn.name) ?? { invocations: 0, billedMs: 0, memoryMb: fn.memoryMb };
    entry.invocations += 1;
    entry.billedMs += Math.max(1, Math.ceil(durationMs));
    this.functions.set(fn.name, entry);
  }

  restApiRequest(): void {
    this.restApiRequests += 1;
  }

  read(): Usage {
    const lambda = Object.fromEntries(
      [...this.functions].map(([name, { invocations, billedMs, memoryMb }]) => [
        name,
        { invocations, billedMs, memoryMb, gbSeconds: (memoryMb / 1024) * (billedMs / 1000) },
      ]),
    );
    return { since: this.since.toISOString(), lambda, restApiRequests: this.restApiRequests };
  }
}

export const usage = new UsageMeter();
