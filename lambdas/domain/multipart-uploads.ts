import { randomBytes } from 'node:crypto';
import * as z from 'zod';
import { ValidationError } from './errors';
import { MAX_PARTS, MIN_PART_BYTES } from './part-limits';
import { type CreateUploadRequest, toValidationError } from './requests';
import type { multipartUploadTicket, Resource } from './resources';

export { MAX_PARTS, MIN_PART_BYTES };

/**
 * Multipart uploads of large inputs: the client PUTs the file in parts, each
 * to its own presigned URL, and retries a failed part alone instead of the
 * whole file; S3 assembles the parts when the upload is completed.
 */

export interface UploadPartSpec {
  readonly partNumber: number;
  readonly contentLength: number;
}

export interface CompletedPart {
  readonly partNumber: number;
  readonly etag: string;
}

/** Where multipart inputs go (one adapter: S3). */
export interface MultipartInputStore {
  /** Starts an upload of the tenant's input `ref`; returns its upload id. */
  startMultipart(tenantId: string, ref: string, contentType: string): Promise<string>;
  /** A presigned PUT for one part; the signature binds the part's length. */
  presignPart(
    tenantId: string,
    ref: string,
    uploadId: string,
    part: UploadPartSpec,
    expiresInSeconds: number,
  ): Promise<string>;
  /** Assembles the parts; throws a ValidationError if a part is missing or its ETag is wrong. */
  completeMultipart(
    tenantId: string,
    ref: string,
    uploadId: string,
    parts: readonly CompletedPart[],
  ): Promise<void>;
}

export type MultipartUploadTicket = Resource<typeof multipartUploadTicket>;

/** The parts of a file of `contentLength` bytes: equal parts but the last, at most MAX_PARTS of them. */
export function planParts(contentLength: number): { partSizeBytes: number; parts: UploadPartSpec[] } {
  const mebibyte = 1024 * 1024;
  const partSizeBytes = Math.max(MIN_PART_BYTES, Math.ceil(contentLength / MAX_PARTS / mebibyte) * mebibyte);
  const parts: UploadPartSpec[] = [];
  for (let offset = 0, partNumber = 1; offset < contentLength; offset += partSizeBytes, partNumber++) {
    parts.push({ partNumber, contentLength: Math.min(partSizeBytes, contentLength - offset) });
  }
  return { partSizeBytes, parts };
}

export async function createMultipartUpload(
  deps: { readonly inputs: MultipartInputStore; readonly now: () => Date },
  tenantId: string,
  upload: CreateUploadRequest,
  expiresInSeconds: number,
): Promise<MultipartUploadTicket> {
  const ref = `upl_${randomBytes(24).toString('base64url')}`;
  const uploadId = await deps.inputs.startMultipart(tenantId, ref, upload.contentType);
  const plan = planParts(upload.contentLength);
  const parts = await Promise.all(
    plan.parts.map(async (part) => ({
      partNumber: part.partNumber,
      uploadUrl: await deps.inputs.presignPart(tenantId, ref, uploadId, part, expiresInSeconds),
    })),
  );
  return {
    ref,
    uploadId,
    partSizeBytes: plan.partSizeBytes,
    parts,
    expiresAt: new Date(deps.now().getTime() + expiresInSeconds * 1000).toISOString(),
  };
}

export const completeMultipartRequest = z.strictObject({
  uploadId: z.string().min(1).max(1024),
  parts: z
    .array(
      z.strictObject({
        partNumber: z.number().int().min(1).max(MAX_PARTS),
        etag: z.string().min(1).max(256),
      }),
    )
    .min(1)
    .max(MAX_PARTS)
    .refine((parts) => parts.every((part, index) => part.partNumber === index + 1), {
      message: 'must list parts 1, 2, 3, … in order, each once',
    }),
});
export type CompleteMultipartRequest = z.infer<typeof completeMultipartRequest>;

export function parseCompleteMultipart(body: unknown): CompleteMultipartRequest {
  const parsed = completeMultipartRequest.safeParse(body);
  if (!parsed.success) throw toValidationError(parsed.error);
  return parsed.data;
}

export const renewPartsRequest = z.strictObject({
  uploadId: z.string().min(1).max(1024),
  /** The file's length, as when the upload started: each part's length follows from it. */
  contentLength: z.number().int().min(1),
  partNumbers: z
    .array(z.number().int().min(1).max(MAX_PARTS))
    .min(1)
    .max(MAX_PARTS)
    .refine((numbers) => new Set(numbers).size === numbers.length, { message: 'must list each part once' }),
});
export type RenewPartsRequest = z.infer<typeof renewPartsRequest>;

export function parseRenewParts(body: unknown, maxUploadBytes: number): RenewPartsRequest {
  const parsed = renewPartsRequest.safeParse(body);
  if (!parsed.success) throw toValidationError(parsed.error);
  const { contentLength, partNumbers } = parsed.data;
  if (contentLength > maxUploadBytes) {
    throw new ValidationError('The request body is invalid.', [
      { pointer: '/contentLength', detail: `must be at most ${maxUploadBytes} bytes` },
    ]);
  }
  const count = planParts(contentLength).parts.length;
  const beyond = partNumbers.findIndex((partNumber) => partNumber > count);
  if (beyond >= 0) {
    throw new ValidationError('The request body is invalid.', [
      {
        pointer: `/partNumbers/${beyond}`,
        detail: `a file of ${contentLength} bytes has parts 1 to ${count}`,
      },
    ]);
  }
  return parsed.data;
}

/**
 * Fresh presigned URLs for parts of an upload already started: its part URLs
 * expire after `expiresInSeconds`, the upload itself lives until it is
 * completed or the bucket's lifecycle rule aborts it, so a slow link renews
 * the URLs of the parts still missing instead of starting over. Each URL binds
 * the part's length planned from the file's, as the first ones did.
 */
export async function renewPartUrls(
  deps: { readonly inputs: MultipartInputStore; readonly now: () => Date },
  tenantId: string,
  ref: string,
  request: RenewPartsRequest,
  expiresInSeconds: number,
): Promise<MultipartUploadTicket> {
  const plan = planParts(request.contentLength);
  const byNumber = new Map(plan.parts.map((part) => [part.partNumber, part]));
  const parts = await Promise.all(
    [...request.partNumbers]
      .sort((a, b) => a - b)
      .map(async (partNumber) => ({
        partNumber,
        uploadUrl: await deps.inputs.presignPart(
          tenantId,
          ref,
          request.uploadId,
          byNumber.get(partNumber) as UploadPartSpec,
          expiresInSeconds,
        ),
      })),
  );
  return {
    ref,
    uploadId: request.uploadId,
    partSizeBytes: plan.partSizeBytes,
    parts,
    expiresAt: new Date(deps.now().getTime() + expiresInSeconds * 1000).toISOString(),
  };
}
