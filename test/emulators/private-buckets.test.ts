import { refusalOf } from '../../local/emulators/sqs-s3';

/**
 * The local buckets are private as Longhaul's are in AWS: what a presigned
 * URL of an output promises (it works without headers, then expires) is what
 * the emulator enforces.
 */
describe('refusalOf', () => {
  const signedAt = new Date('2026-12-02T10:00:00.000Z');
  const presigned = (expiresSeconds: number) =>
    new URLSearchParams({
      'X-Amz-Date': '20261202T100000Z',
      'X-Amz-Expires': String(expiresSeconds),
      'X-Amz-Signature': 'abc',
    });

  it('lets a signed SDK request and a presigned URL within its lifetime through', () => {
    expect(refusalOf('AWS4-HMAC-SHA256 Credential=…', new URLSearchParams())).toBeUndefined();
    expect(refusalOf(undefined, presigned(3600), new Date(signedAt.getTime() + 3599_000))).toBeUndefined();
  });

  it('refuses a request neither signed nor presigned, and a presigned URL past its expiry', () => {
    expect(refusalOf(undefined, new URLSearchParams())).toBe('Access Denied');
    expect(refusalOf(undefined, presigned(3600), new Date(signedAt.getTime() + 3601_000))).toBe(
      'Request has expired',
    );
    expect(refusalOf(undefined, new URLSearchParams({ 'X-Amz-Signature': 'abc' }))).toBe('Access Denied');
  });
});
