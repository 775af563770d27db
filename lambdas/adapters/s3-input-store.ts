import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  NotFound,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { InputStore } from '../domain/ports';

/** Where a tenant's input lives: the tenant is part of the key, so a ref never reaches another tenant's object. */
export const inputObjectKey = (tenantId: string, ref: string): string =>
  `inputs/${encodeURIComponent(tenantId)}/${ref}`;

export class S3InputStore implements InputStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async putInput(tenantId: string, ref: string, bytes: Uint8Array, contentType: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: inputObjectKey(tenantId, ref),
        Body: bytes,
        ContentType: contentType,
      }),
    );
  }

  presignUpload(
    tenantId: string,
    ref: string,
    upload: { readonly contentType: string; readonly contentLength: number },
    expiresInSeconds: number,
  ): Promise<string> {
    // Signing the type and length makes S3 refuse any other body with this URL.
    return getSignedUrl(
      this.client,
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: inputObjectKey(tenantId, ref),
        ContentType: upload.contentType,
        ContentLength: upload.contentLength,
      }),
      { expiresIn: expiresInSeconds, signableHeaders: new Set(['content-type', 'content-length']) },
    );
  }

  downloadUrl(tenantId: string, ref: string, expiresInSeconds: number): Promise<string> {
    return getSignedUrl(
      this.client,
      new GetObjectCommand({ Bucket: this.bucket, Key: inputObjectKey(tenantId, ref) }),
      { expiresIn: expiresInSeconds },
    );
  }

  async deleteInput(tenantId: string, ref: string): Promise<void> {
    await this.client.send(
      new DeleteObjectCommand({ Bucket: this.bucket, Key: inputObjectKey(tenantId, ref) }),
    );
  }

  async inputInfo(tenantId: string, ref: string): Promise<{ size: number; contentType: string } | undefined> {
    try {
      const head = await this.client.send(
        new HeadObjectCommand({ Bucket: this.bucket, Key: inputObjectKey(tenantId, ref) }),
      );
      return { size: head.ContentLength ?? 0, contentType: head.ContentType ?? 'application/octet-stream' };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }
}

/**
 * Whether a HeadObject failure means the object is not there. S3 answers a
 * missing key with 404 only to a caller that may list the bucket; to any
 * other it answers 403 (with no body, since HEAD has none), and the
 * functions may not list it.
 */
export function isMissing(error: unknown): boolean {
  if (error instanceof NotFound || (error as { name?: string }).name === 'NotFound') return true;
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return status === 404 || status === 403;
}
