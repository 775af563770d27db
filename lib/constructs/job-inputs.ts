import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Bucket, HttpMethods } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { acknowledge } from '../nag';
import { ABORT_INCOMPLETE_UPLOADS, deliverAccessLogsByBucketPolicy, PRIVATE_BUCKET } from './private-bucket';

export interface JobInputsProps {
  /**
   * Days after upload when an input object is deleted. Must outlive the job that
   * uses it: the job's retention after finishing plus the longest a job may
   * wait and run.
   */
  readonly expirationDays: number;

  /**
   * Days after which server access log objects are deleted.
   * @default 365
   */
  readonly accessLogExpirationDays?: number;

  /**
   * Origins allowed to PUT to presigned upload URLs from a browser.
   * @default - none: no CORS rules, presigned uploads work from servers and CLIs only
   */
  readonly uploadCorsOrigins?: readonly string[];

  /**
   * What happens to the buckets when they leave the stack.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * Private storage for job inputs: file parts of multipart requests and presigned
 * uploads. The bucket is never public, refuses plain HTTP, encrypts with SSE-S3
 * (presigned URLs then need no KMS permissions on the uploader's side), expires
 * objects once no job can need them, and records server access logs to a
 * dedicated log bucket.
 */
export class JobInputs extends Construct {
  /** Job inputs, keyed by the runtime. */
  public readonly inputBucket: Bucket;
  /** Server access logs of the input bucket, and of the output bucket (see JobOutputs). */
  public readonly accessLogBucket: Bucket;

  constructor(scope: Construct, id: string, props: JobInputsProps) {
    super(scope, id);
    if (!Number.isInteger(props.expirationDays) || props.expirationDays < 1) {
      throw new Error(
        `JobInputs ${this.node.path}: expirationDays must be a positive integer, got ${props.expirationDays}`,
      );
    }
    const accessLogExpirationDays = props.accessLogExpirationDays ?? 365;
    if (!Number.isInteger(accessLogExpirationDays) || accessLogExpirationDays < 1) {
      throw new Error(
        `JobInputs ${this.node.path}: accessLogExpirationDays must be a positive integer, got ${accessLogExpirationDays}`,
      );
    }
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    deliverAccessLogsByBucketPolicy(this);

    this.accessLogBucket = new Bucket(this, 'AccessLogBucket', {
      ...PRIVATE_BUCKET,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(accessLogExpirationDays) }],
      removalPolicy,
    });
    acknowledge(
      this.accessLogBucket,
      'AwsSolutions-S1',
      'This bucket is the server access log destination of the input and output buckets; logging it into itself would log its own log deliveries endlessly, and logging it elsewhere only moves the question.',
    );

    this.inputBucket = new Bucket(this, 'InputBucket', {
      ...PRIVATE_BUCKET,
      serverAccessLogsBucket: this.accessLogBucket,
      serverAccessLogsPrefix: 'input-bucket/',
      lifecycleRules: [
        { id: 'expire-inputs', expiration: Duration.days(props.expirationDays) },
        ABORT_INCOMPLETE_UPLOADS,
      ],
      cors:
        props.uploadCorsOrigins && props.uploadCorsOrigins.length > 0
          ? [
              {
                allowedMethods: [HttpMethods.PUT],
                allowedOrigins: [...props.uploadCorsOrigins],
                allowedHeaders: ['*'],
                maxAge: 3600,
              },
            ]
          : undefined,
      removalPolicy,
    });
  }
}
