import { S3Client } from '@aws-sdk/client-s3';
import { S3OutputStore, signedUrlLifetimeSeconds } from '../../lambdas/adapters/s3-output-store';

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
