import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { OutputStore } from '../domain/ports';
import { isMissing } from './s3-input-store';

/** Outputs above this go in parts of this size (S3's parts are 5 MiB at least, but the last). */
export const OUTPUT_PART_BYTES = 8 * 1024 * 1024;

export class S3OutputStore implements OutputStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly urlTtlSeconds: number,
  ) {}

  async putOutput(key: string, body: Uint8Array | string, contentType: string): Promise<void> {
    const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    if (bytes.byteLength <= OUTPUT_PART_BYTES) {
      await this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: bytes, ContentType: contentType }),
      );
      return;
    }
    await this.putInParts(key, bytes, contentType);
  }

  /**
   * A large output (a chunk of a long recording) in parts: S3 takes one PUT
   * up to 5 GB, but parts keep each request small, so one slow or failed
   * request costs one part, not the object. An upload left incomplete by a
   * failure is aborted by the bucket's lifecycle rule within a day.
   */
  private async putInParts(key: string, bytes: Uint8Array, contentType: string): Promise<void> {
    const { UploadId } = await this.client.send(
      new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: contentType }),
    );
    const parts: { ETag?: string; PartNumber: number }[] = [];
    for (let offset = 0; offset < bytes.byteLength; offset += OUTPUT_PART_BYTES) {
      const PartNumber = parts.length + 1;
      const { ETag } = await this.client.send(
        new UploadPartCommand({
          Bucket: this.bucket,
          Key: key,
          UploadId,
          PartNumber,
          Body: bytes.subarray(offset, offset + OUTPUT_PART_BYTES),
        }),
      );
      parts.push({ ETag, PartNumber });
    }
    await this.client.send(
      new CompleteMultipartUploadCommand({
        Bucket: this.bucket,
        Key: key,
        UploadId,
        MultipartUpload: { Parts: parts },
      }),
    );
  }

  async getOutput(key: string): Promise<Uint8Array | undefined> {
    try {
      const { Body } = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return Body ? await Body.transformToByteArray() : undefined;
    } catch (error) {
      if ((error as { name?: string }).name === 'NoSuchKey' || isMissing(error)) return undefined;
      throw error;
    }
  }

  /**
   * A page of the listing (at most 1,000 keys) is deleted with one
   * DeleteObjects, which takes as many; a key that failed to go fails the
   * call, so a retry deletes what is left.
   */
  async deleteOutputs(prefix: string): Promise<number> {
    if (prefix === '') throw new RangeError('Refusing to delete every output: the prefix is empty.');
    let deleted = 0;
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      const keys = (page.Contents ?? []).flatMap(({ Key }) => (Key ? [{ Key }] : []));
      if (keys.length > 0) {
        const { Errors } = await this.client.send(
          new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys, Quiet: true } }),
        );
        if (Errors && Errors.length > 0) {
          throw new Error(
            `${Errors.length} outputs under ${prefix} could not be deleted (first: ${Errors[0]?.Key}: ${Errors[0]?.Code}).`,
          );
        }
        deleted += keys.length;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return deleted;
  }

  async outputUrl(key: string): Promise<string> {
    const { expiration } = await this.client.config.credentials();
    return getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.bucket, Key: key }), {
      expiresIn: signedUrlLifetimeSeconds(this.urlTtlSeconds, expiration, Date.now()),
    });
  }
}

/**
 * How long a URL signed now may claim to live: S3 refuses a presigned request
 * once the temporary credentials that signed it have expired, whatever its
 * X-Amz-Expires says, so a longer claim only hands out a link that dies early.
 * Capped at `ttlSeconds`, and at the credentials' expiration when the SDK knows
 * it (it does for STS, container and instance credentials; Lambda's environment
 * credentials carry none, which is why the TTL settings stay within a role
 * session's longest life).
 */
export function signedUrlLifetimeSeconds(
  ttlSeconds: number,
  credentialsExpiration: Date | undefined,
  nowMs: number,
): number {
  if (!credentialsExpiration) return ttlSeconds;
  const remaining = Math.floor((credentialsExpiration.getTime() - nowMs) / 1000);
  return Math.max(1, Math.min(ttlSeconds, remaining));
}
