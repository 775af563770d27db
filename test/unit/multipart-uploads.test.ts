import { ValidationError } from '../../lambdas/domain/errors';
import {
  MIN_PART_BYTES,
  type MultipartInputStore,
  parseRenewParts,
  renewPartUrls,
  type UploadPartSpec,
} from '../../lambdas/domain/multipart-uploads';

const MAX_UPLOAD_BYTES = 512 * 1024 * 1024;
const SIZE = 2 * MIN_PART_BYTES + 5;

/** Signs nothing: records each part it is asked to presign and answers a URL naming it. */
function recordingInputs() {
  const presigned: { tenantId: string; ref: string; uploadId: string; part: UploadPartSpec; ttl: number }[] =
    [];
  const inputs: MultipartInputStore = {
    startMultipart: async () => {
      throw new Error('a renewal starts no upload');
    },
    presignPart: async (tenantId, ref, uploadId, part, ttl) => {
      presigned.push({ tenantId, ref, uploadId, part, ttl });
      return `https://s3.test/${ref}/${part.partNumber}?ttl=${ttl}`;
    },
    completeMultipart: async () => {
      throw new Error('a renewal completes nothing');
    },
  };
  return { inputs, presigned };
}

describe('renewPartUrls', () => {
  it('presigns only the parts asked for, each with its planned length, in part order', async () => {
    const { inputs, presigned } = recordingInputs();
    const now = new Date('2026-01-01T00:00:00.000Z');
    const ticket = await renewPartUrls(
      { inputs, now: () => now },
      'tenant-a',
      'upl_ref',
      { uploadId: 'u1', contentLength: SIZE, partNumbers: [3, 1] },
      900,
    );
    expect(presigned.map(({ part }) => part)).toEqual([
      { partNumber: 1, contentLength: MIN_PART_BYTES },
      { partNumber: 3, contentLength: 5 },
    ]);
    expect(
      presigned.every((p) => p.tenantId === 'tenant-a' && p.ref === 'upl_ref' && p.uploadId === 'u1'),
    ).toBe(true);
    expect(ticket).toEqual({
      ref: 'upl_ref',
      uploadId: 'u1',
      partSizeBytes: MIN_PART_BYTES,
      parts: [
        { partNumber: 1, uploadUrl: 'https://s3.test/upl_ref/1?ttl=900' },
        { partNumber: 3, uploadUrl: 'https://s3.test/upl_ref/3?ttl=900' },
      ],
      expiresAt: '2026-01-01T00:15:00.000Z',
    });
  });
});

describe('parseRenewParts', () => {
  const refusal = (body: unknown) => {
    try {
      parseRenewParts(body, MAX_UPLOAD_BYTES);
    } catch (error) {
      if (error instanceof ValidationError) return error.errors;
      throw error;
    }
    throw new Error('accepted');
  };

  it('accepts the parts of the file', () => {
    expect(
      parseRenewParts({ uploadId: 'u1', contentLength: SIZE, partNumbers: [2, 3] }, MAX_UPLOAD_BYTES),
    ).toEqual({ uploadId: 'u1', contentLength: SIZE, partNumbers: [2, 3] });
  });

  it.each([
    [
      'a part the file does not have',
      { uploadId: 'u1', contentLength: SIZE, partNumbers: [1, 4] },
      [{ pointer: '/partNumbers/1', detail: `a file of ${SIZE} bytes has parts 1 to 3` }],
    ],
    [
      'a file over the upload limit',
      { uploadId: 'u1', contentLength: MAX_UPLOAD_BYTES + 1, partNumbers: [1] },
      [{ pointer: '/contentLength', detail: `must be at most ${MAX_UPLOAD_BYTES} bytes` }],
    ],
    [
      'a part listed twice',
      { uploadId: 'u1', contentLength: SIZE, partNumbers: [2, 2] },
      [{ pointer: '/partNumbers', detail: 'must list each part once' }],
    ],
  ])('refuses %s', (_what, body, errors) => {
    expect(refusal(body)).toEqual(errors);
  });

  it('refuses no parts, an unknown field and a missing upload id', () => {
    expect(refusal({ uploadId: 'u1', contentLength: SIZE, partNumbers: [] })).toEqual([
      expect.objectContaining({ pointer: '/partNumbers' }),
    ]);
    expect(refusal({ uploadId: 'u1', contentLength: SIZE, partNumbers: [1], extra: 1 })).toEqual([
      expect.objectContaining({ pointer: '' }),
    ]);
    expect(refusal({ contentLength: SIZE, partNumbers: [1] })).toEqual([
      expect.objectContaining({ pointer: '/uploadId' }),
    ]);
  });
});
