import { HeadObjectCommand, NotFound, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { S3InputStore } from '../../lambdas/adapters/s3-input-store';

const s3 = mockClient(S3Client);
const store = new S3InputStore(new S3Client({ region: 'us-east-1' }), 'inputs');

/** What the SDK raises for a HEAD answered with `status` and no body, as S3 answers HEAD. */
const bodiless = (status: number) =>
  new S3ServiceException({
    name: 'Unknown',
    $fault: status >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode: status },
    message: 'UnknownError',
  });

beforeEach(() => s3.reset());

it('reads the size and type of an upload under the tenant', async () => {
  s3.on(HeadObjectCommand).resolves({ ContentLength: 12, ContentType: 'audio/wav' });
  await expect(store.inputInfo('dev', 'up_1')).resolves.toEqual({ size: 12, contentType: 'audio/wav' });
  expect(s3.commandCalls(HeadObjectCommand)[0]?.args[0].input).toEqual({
    Bucket: 'inputs',
    Key: 'inputs/dev/up_1',
  });
});

it('reports a missing upload answered with 404, to a caller that may list the bucket', async () => {
  s3.on(HeadObjectCommand).rejects(new NotFound({ $metadata: { httpStatusCode: 404 }, message: 'NotFound' }));
  await expect(store.inputInfo('dev', 'up_1')).resolves.toBeUndefined();
});

it('reports a missing upload answered with 403, as S3 answers a caller that may not list the bucket', async () => {
  s3.on(HeadObjectCommand).rejects(bodiless(403));
  await expect(store.inputInfo('dev', 'up_1')).resolves.toBeUndefined();
});

it('passes on any other failure', async () => {
  s3.on(HeadObjectCommand).rejects(bodiless(500));
  await expect(store.inputInfo('dev', 'up_1')).rejects.toMatchObject({ $metadata: { httpStatusCode: 500 } });
});
