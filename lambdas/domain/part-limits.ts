/**
 * S3's limits on a multipart upload's parts: plain constants under the
 * multipart uploads (lambdas/domain/multipart-uploads.ts) and the resource
 * schemas (lambdas/domain/resources.ts), which both build on them.
 */

/** S3's smallest part (but the last), and the part size used unless a file needs larger parts. */
export const MIN_PART_BYTES = 8 * 1024 * 1024;
/** S3's largest part count. */
export const MAX_PARTS = 10_000;
