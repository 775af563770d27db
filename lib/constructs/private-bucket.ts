import { Duration } from 'aws-cdk-lib';
import {
  BlockPublicAccess,
  BucketEncryption,
  type BucketProps,
  type LifecycleRule,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import { S3_SERVER_ACCESS_LOGS_USE_BUCKET_POLICY } from 'aws-cdk-lib/cx-api';
import type { Construct } from 'constructs';

/**
 * What every bucket of Longhaul is: never public, reached over TLS only, its
 * objects owned by the bucket's account whoever wrote them, and encrypted with
 * SSE-S3, which a presigned URL needs no KMS permission for and the only
 * encryption S3 server access logging delivers to.
 */
export const PRIVATE_BUCKET = {
  blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
  encryption: BucketEncryption.S3_MANAGED,
  enforceSSL: true,
  objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
} as const satisfies BucketProps;

/** Parts of a multipart upload that was never completed or aborted are removed a day on. */
export const ABORT_INCOMPLETE_UPLOADS: LifecycleRule = {
  id: 'abort-incomplete-uploads',
  abortIncompleteMultipartUploadAfter: Duration.days(1),
};

/**
 * Has S3 deliver server access logs to buckets of `scope` through the log
 * bucket's policy rather than the legacy LogDeliveryWrite ACL, which cannot
 * coexist with BucketOwnerEnforced object ownership. Set on the construct so it
 * does not depend on the app's feature flags; call it before `scope` has
 * children.
 */
export function deliverAccessLogsByBucketPolicy(scope: Construct): void {
  scope.node.setContext(S3_SERVER_ACCESS_LOGS_USE_BUCKET_POLICY, true);
}
