import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { OutputStore } from '../domain/ports';
import { isMissing } from './s3-input-store';

export class S3OutputStore implements OutputStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly urlTtlSeconds: number,
  ) {}

  async putOutput(key: string, body: Uint8Array | string, contentType: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }),
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
