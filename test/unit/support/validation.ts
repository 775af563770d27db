import { ValidationError } from '../../../lambdas/domain/errors';

/** The field errors of the ValidationError `fn` throws; fails the test if it throws anything else or nothing. */
export function errorsOf(fn: () => unknown): ValidationError['errors'] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return (error as ValidationError).errors;
  }
  throw new Error('expected a ValidationError');
}
