import { RemovalPolicy } from 'aws-cdk-lib';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct, IConstruct } from 'constructs';

// Its own module: the HTTP API and live progress both create one, and the
// observability construct reads the HTTP API, so it cannot live there.

/**
 * Creates the log group API Gateway writes a stage's execution logs to, and
 * makes the stage wait for it. API Gateway otherwise creates
 * `API-Gateway-Execution-Logs_{apiId}/{stage}` itself on the first log line,
 * outside the stack and kept forever; created here first, it has the project's
 * retention. The same name serves REST and WebSocket stages.
 */
export function createExecutionLogGroup(
  scope: Construct,
  id: string,
  props: {
    readonly apiId: string;
    /** The stage's name as written in the app, not the stage's own attribute: that refers to the stage, which waits for this. */
    readonly stageName: string;
    readonly stage: IConstruct;
    readonly retention: RetentionDays;
  },
): LogGroup {
  const logGroup = new LogGroup(scope, id, {
    logGroupName: `API-Gateway-Execution-Logs_${props.apiId}/${props.stageName}`,
    retention: props.retention,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  props.stage.node.addDependency(logGroup);
  return logGroup;
}
