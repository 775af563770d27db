import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  type S3Client,
  S3ServiceException,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { ValidationError } from '../domain/errors';
import type { CompletedPart, MultipartInputStore, UploadPartSpec } from '../domain/multipart-uploads';
import { inputObjectKey } from './s3-input-store';

/** S3 answers these when the client names parts, ETags or an upload that are not there. */
const CLIENT_ERRORS = new Set(['InvalidPart', 'InvalidPartOrder', 'EntityTooSmall', 'NoSuchUpload']);

export class S3MultipartInputs implements MultipartInputStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async startMultipart(tenantId: string, ref: string, contentType: string): Promise<string> {
    const { UploadId } = await this.client.send(
      new CreateMultipartUploadCommand({
        Bucket: this.bucket,
        Key: inputObjectKey(tenantId, ref),
        ContentType: contentType,
      }),
    );
    if (!UploadId) throw new Error('S3 started a multipart upload without an upload id');
    return UploadId;
  }

  presignPart(
    tenantId: string,
    ref: string,
    uploadId: string,
    part: UploadPartSpec,
    expiresInSeconds: number,
  ): Promise<string> {
    // Signing each part's length bounds the whole file to the size the tenant declared.
    return getSignedUrl(
      this.client,
      new UploadPartCommand({
        Bucket: this.bucket,
        Key: inputObjectKey(tenantId, ref),
        UploadId: uploadId,
        PartNumber: part.partNumber,
        ContentLength: part.contentLength,
      }),
      { expiresIn: expiresInSeconds, signableHeaders: new Set(['content-length']) },
    );
  }

  async completeMultipart(
    tenantId: string,
    ref: string,
    uploadId: string,
    parts: readonly CompletedPart[],
  ): Promise<void> {
    try {
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: inputObjectKey(tenantId, ref),
          UploadId: uploadId,
          MultipartUpload: { Parts: parts.map((part) => ({ PartNumber: part.partNumber, ETag: part.etag })) },
        }),
      );
    } catch (error) {
      if (error instanceof S3ServiceException && CLIENT_ERRORS.has(error.name)) {
        throw new ValidationError('The upload cannot be completed.', [
          { pointer: '/parts', detail: `${error.name}: ${error.message}` },
        ]);
      }
      throw error;
    }
  }
}
