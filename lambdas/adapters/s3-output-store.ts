import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { OutputStore } from '../domain/ports';

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

  outputUrl(key: string): Promise<string> {
    return getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.bucket, Key: key }), {
      expiresIn: this.urlTtlSeconds,
    });
  }
}
