/**
 * Errors the Step Functions API answers with. The AWS SDK picks the exception
 * class from `__type`, so each one is named exactly as in the service model,
 * and messages follow the service's wording.
 */
export class ApiError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly fields: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = type;
  }
}

export const validationError = (message: string, reason?: string): ApiError =>
  new ApiError('ValidationException', message, reason ? { reason } : {});

export const missingParameter = (name: string): ApiError =>
  validationError(
    `1 validation error detected: Value null at '${name}' failed to satisfy constraint: Member must not be null`,
  );

export const invalidArn = (arn: string): ApiError => new ApiError('InvalidArn', `Invalid Arn: '${arn}'`);

export const invalidName = (name: string): ApiError => new ApiError('InvalidName', `Invalid Name: '${name}'`);

export const invalidExecutionInput = (detail: string): ApiError =>
  new ApiError('InvalidExecutionInput', `Invalid State Machine Execution Input: '${detail}'`);

export const invalidOutput = (detail: string): ApiError =>
  new ApiError('InvalidOutput', `Invalid Output: '${detail}'`);

export const stateMachineDoesNotExist = (arn: string): ApiError =>
  new ApiError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${arn}'`);

export const executionDoesNotExist = (arn: string): ApiError =>
  new ApiError('ExecutionDoesNotExist', `Execution Does Not Exist: '${arn}'`);

export const executionAlreadyExists = (arn: string): ApiError =>
  new ApiError('ExecutionAlreadyExists', `Execution Already Exists: '${arn}'`);

export const invalidToken = (): ApiError => new ApiError('InvalidToken', "Invalid Token: 'Invalid token'");

export const taskDoesNotExist = (): ApiError =>
  new ApiError('TaskDoesNotExist', "Task Does Not Exist: 'Provided task does not exist'");

export const taskTimedOut = (): ApiError =>
  new ApiError('TaskTimedOut', "Task Timed Out: 'Provided task does not exist anymore'");

export const executionNotRedrivable = (arn: string, reason: string): ApiError =>
  new ApiError('ExecutionNotRedrivable', `Execution Not Redrivable: '${arn}' ${reason}`);
