import { toProblem } from '../../lambdas/api/problems';
import {
  ForbiddenError,
  IdempotencyKeyInUseError,
  IdempotencyKeyMissingError,
  IdempotencyKeyReusedError,
  JobAlreadyFinishedError,
  JobNotFoundError,
  PayloadTooLargeError,
  TenantNotFoundError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../../lambdas/domain/errors';

describe('toProblem', () => {
  it.each([
    [new ValidationError('bad', [{ pointer: '/type', detail: 'x' }]), 400, 'validation-failed'],
    [new IdempotencyKeyMissingError('missing'), 400, 'idempotency-key-missing'],
    [new ForbiddenError('no'), 403, 'forbidden'],
    [new JobNotFoundError('job_x'), 404, 'not-found'],
    [new TenantNotFoundError('acme'), 404, 'not-found'],
    [new IdempotencyKeyInUseError('busy'), 409, 'idempotency-key-in-use'],
    [new JobAlreadyFinishedError('job_x', 'succeeded'), 409, 'job-already-finished'],
    [new PayloadTooLargeError('big'), 413, 'payload-too-large'],
    [new UnsupportedMediaTypeError('text'), 415, 'unsupported-media-type'],
    [new IdempotencyKeyReusedError('reused'), 422, 'idempotency-key-reused'],
  ])('maps %p to %i %s', (error, status, code) => {
    const { problem, clientError } = toProblem(error);
    expect(problem).toMatchObject({
      status,
      code,
      type: `urn:longhaul:problem:${code}`,
      detail: error.message,
    });
    expect(problem.title).toEqual(expect.any(String));
    expect(clientError).toBe(true);
  });

  it('keeps the field errors of a validation error', () => {
    expect(toProblem(new ValidationError('bad', [{ pointer: '/type', detail: 'x' }])).problem.errors).toEqual(
      [{ pointer: '/type', detail: 'x' }],
    );
  });

  it('asks the client to retry an in-use key after a second', () => {
    expect(toProblem(new IdempotencyKeyInUseError('busy')).headers).toEqual({ 'retry-after': '1' });
  });

  it('shows nothing of an unexpected error', () => {
    const error = new Error('ECONNRESET at 10.0.0.7:443 table longhaul-jobs');
    const { problem, clientError } = toProblem(error);
    expect(problem).toMatchObject({ status: 500, code: 'internal-error' });
    expect(JSON.stringify(problem)).not.toMatch(/ECONNRESET|10\.0\.0\.7|longhaul-jobs|at /);
    expect(clientError).toBe(false);
  });
});
