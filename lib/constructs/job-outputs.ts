import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Bucket, type IBucket } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { ABORT_INCOMPLETE_UPLOADS, deliverAccessLogsByBucketPolicy, PRIVATE_BUCKET } from './private-bucket';

export interface JobOutputsProps {
  /**
   * Days after it is written when an output object is deleted. Outputs are written
   * as a job finishes, so this is the job's retention plus a margin for the
   * time DynamoDB takes to remove an expired job item.
   */
  readonly expirationDays: number;

  /**
   * Where S3 delivers the output bucket's server access logs: the access-log
   * bucket of JobInputs, so every data bucket logs to one place.
   */
  readonly accessLogBucket: IBucket;

  /**
   * What happens to the bucket when it leaves the stack.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * Private storage for job outputs (generated images, transcripts), which clients
 * fetch through short-lived presigned GET URLs. Never public, refuses plain HTTP,
 * encrypts with SSE-S3 (a presigned URL then needs no KMS permission behind it),
 * expires objects once their job has expired, and logs access.
 */
export class JobOutputs extends Construct {
  /** Job outputs, keyed by the runtime (`outputs/<tenant>/<job>/…`). */
  public readonly outputBucket: Bucket;

  constructor(scope: Construct, id: string, props: JobOutputsProps) {
    super(scope, id);
    if (!Number.isInteger(props.expirationDays) || props.expirationDays < 1) {
      throw new Error(
        `JobOutputs ${this.node.path}: expirationDays must be a positive integer, got ${props.expirationDays}`,
      );
    }
    deliverAccessLogsByBucketPolicy(this);

    this.outputBucket = new Bucket(this, 'OutputBucket', {
      ...PRIVATE_BUCKET,
      serverAccessLogsBucket: props.accessLogBucket,
      serverAccessLogsPrefix: 'output-bucket/',
      lifecycleRules: [
        { id: 'expire-outputs', expiration: Duration.days(props.expirationDays) },
        ABORT_INCOMPLETE_UPLOADS,
      ],
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
  }
}
