import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import {
  OUTPUT_PART_BYTES,
  S3OutputStore,
  signedUrlLifetimeSeconds,
} from '../../lambdas/adapters/s3-output-store';

/** The lifetime a presigned URL claims, from its X-Amz-Expires. */
const claimedLifetime = (url: string) => Number(new URL(url).searchParams.get('X-Amz-Expires'));

const storeSignedWith = (expiration?: Date) =>
  new S3OutputStore(
    new S3Client({
      region: 'us-east-1',
      credentials: async () => ({
        accessKeyId: 'ASIAEXAMPLE',
        secretAccessKey: 'secret',
        sessionToken: 'token',
        ...(expiration ? { expiration } : {}),
      }),
    }),
    'outputs',
    3600,
  );

describe('S3OutputStore.outputUrl', () => {
  it('never claims to outlive the temporary credentials that sign it', async () => {
    const url = await storeSignedWith(new Date(Date.now() + 600_000)).outputUrl('outputs/job_1.png');
    expect(claimedLifetime(url)).toBeGreaterThanOrEqual(598);
    expect(claimedLifetime(url)).toBeLessThanOrEqual(600);
  });

  it('gives the configured lifetime when the credentials live longer', async () => {
    const url = await storeSignedWith(new Date(Date.now() + 6 * 3600_000)).outputUrl('outputs/job_1.png');
    expect(claimedLifetime(url)).toBe(3600);
  });

  it('gives the configured lifetime when the credentials carry no expiration', async () => {
    expect(claimedLifetime(await storeSignedWith().outputUrl('outputs/job_1.png'))).toBe(3600);
  });
});

describe('signedUrlLifetimeSeconds', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');
  it.each([
    [3600, undefined, 3600],
    [3600, now + 7200_000, 3600],
    [3600, now + 90_500, 90],
    // Credentials about to be refreshed still sign a URL S3 accepts for what they have left.
    [3600, now + 300, 1],
  ])('with a TTL of %i s and credentials expiring at %p: %i s', (ttl, expiresAt, expected) => {
    expect(
      signedUrlLifetimeSeconds(ttl, expiresAt === undefined ? undefined : new Date(expiresAt), now),
    ).toBe(expected);
  });
});

describe('S3OutputStore.deleteOutputs', () => {
  const s3 = mockClient(S3Client);
  const store = new S3OutputStore(new S3Client({ region: 'us-east-1' }), 'outputs', 3600);
  beforeEach(() => s3.reset());

  it('deletes every page of keys under the prefix, one DeleteObjects per page', async () => {
    s3.on(ListObjectsV2Command, { ContinuationToken: undefined }).resolves({
      Contents: [{ Key: 'outputs/t/job_1/a' }, { Key: 'outputs/t/job_1/b' }],
      IsTruncated: true,
      NextContinuationToken: 'page-2',
    });
    s3.on(ListObjectsV2Command, { ContinuationToken: 'page-2' }).resolves({
      Contents: [{ Key: 'outputs/t/job_1/c' }],
      IsTruncated: false,
    });
    s3.on(DeleteObjectsCommand).resolves({});

    await expect(store.deleteOutputs('outputs/t/job_1/')).resolves.toBe(3);

    expect(s3.commandCalls(ListObjectsV2Command).map((call) => call.args[0].input)).toEqual([
      { Bucket: 'outputs', Prefix: 'outputs/t/job_1/', ContinuationToken: undefined },
      { Bucket: 'outputs', Prefix: 'outputs/t/job_1/', ContinuationToken: 'page-2' },
    ]);
    expect(s3.commandCalls(DeleteObjectsCommand).map((call) => call.args[0].input)).toEqual([
      {
        Bucket: 'outputs',
        Delete: { Objects: [{ Key: 'outputs/t/job_1/a' }, { Key: 'outputs/t/job_1/b' }], Quiet: true },
      },
      { Bucket: 'outputs', Delete: { Objects: [{ Key: 'outputs/t/job_1/c' }], Quiet: true } },
    ]);
  });

  it('fails when a key could not be deleted, so a retry deletes what is left', async () => {
    s3.on(ListObjectsV2Command).resolves({ Contents: [{ Key: 'outputs/t/job_1/a' }] });
    s3.on(DeleteObjectsCommand).resolves({ Errors: [{ Key: 'outputs/t/job_1/a', Code: 'AccessDenied' }] });
    await expect(store.deleteOutputs('outputs/t/job_1/')).rejects.toThrow(
      '1 outputs under outputs/t/job_1/ could not be deleted (first: outputs/t/job_1/a: AccessDenied).',
    );
  });

  it('refuses an empty prefix, which would delete every job’s outputs', async () => {
    await expect(store.deleteOutputs('')).rejects.toThrow(RangeError);
    expect(s3.calls()).toHaveLength(0);
  });
});

describe('S3OutputStore.putOutput', () => {
  it('puts a small output in one request and a large one in parts of OUTPUT_PART_BYTES', async () => {
    const s3 = mockClient(S3Client);
    s3.on(CreateMultipartUploadCommand).resolves({ UploadId: 'up-1' });
    s3.on(UploadPartCommand).callsFake((input) => ({ ETag: `"etag-${input.PartNumber}"` }));
    const store = new S3OutputStore(new S3Client({ region: 'us-east-1' }), 'outputs', 3600);

    await store.putOutput('outputs/acme/job_1/transcript.json', '{}', 'application/json');
    expect(s3.commandCalls(PutObjectCommand)).toHaveLength(1);

    const large = new Uint8Array(2 * OUTPUT_PART_BYTES + 5);
    await store.putOutput('outputs/acme/job_1/chunks/chunk-000.flac', large, 'audio/flac');
    const parts = s3.commandCalls(UploadPartCommand).map((call) => call.args[0].input);
    expect(parts.map((part) => [part.PartNumber, (part.Body as Uint8Array).byteLength])).toEqual([
      [1, OUTPUT_PART_BYTES],
      [2, OUTPUT_PART_BYTES],
      [3, 5],
    ]);
    expect(s3.commandCalls(CompleteMultipartUploadCommand)[0]?.args[0].input).toMatchObject({
      UploadId: 'up-1',
      MultipartUpload: {
        Parts: [
          { ETag: '"etag-1"', PartNumber: 1 },
          { ETag: '"etag-2"', PartNumber: 2 },
          { ETag: '"etag-3"', PartNumber: 3 },
        ],
      },
    });
    expect(s3.commandCalls(PutObjectCommand)).toHaveLength(1);
    s3.restore();
  });
});
