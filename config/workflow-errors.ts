/**
 * The error names of a job's execution that the state machine's Retry and
 * Catch clauses match, or that the steps read back from what a Catch caught. The state machine (lib/) and the functions
 * (lambdas/) both read them from here.
 */

/**
 * Errors Longhaul's own code raises: the steps and compute functions by their
 * errors' `name`, and whoever fails a waiting step's task token by the error
 * it sends with it.
 */
export const StepError = {
  /** An input that lives elsewhere could not be reached just now: prepare is retried. */
  assetUnavailable: 'AssetUnavailable',
  /** The provider did not accept the submission, but may later: submit is retried. */
  providerUnavailable: 'ProviderUnavailable',
  /** The provider throttled or was down: the job went back to its line and the run ends, to start again when granted. */
  providerPaused: 'ProviderPaused',
  /**
   * A step needs an answer of a provider that throttles or is down (a status read): its grants pause, and the
   * step is tried again for as long as the job's own timeout allows, the job running on.
   */
  waitingForProvider: 'WaitingForProvider',
  /** The submission was sent and its outcome is unknown: resent with the same key, then reviewed. */
  providerAmbiguous: 'ProviderAmbiguous',
  /** The provider refused the submission for good: the job fails. */
  providerRejected: 'ProviderRejected',
  /** Sent with the task token when the provider reports the job failed. */
  providerJobFailed: 'ProviderJobFailed',
  /** A step's input is unusable: retrying cannot help. */
  invalidJobInput: 'InvalidJobInput',
  /** The job cannot go on without a person. */
  needsReview: 'NeedsReview',
  /** The job was settled elsewhere (canceled, resolved): the workflow has nothing left to do. */
  jobSettled: 'JobSettled',
  /** Sent to the waiting step when the client cancels a running job, so the workflow settles it. */
  jobCanceled: 'JobCanceled',
  /** The failure path's park step while its job is failed, and the state for a resume that cannot go back. */
  jobFailed: 'JobFailed',
  /** A resumed job's provider has no slot free just now: the park step is retried. */
  slotUnavailable: 'SlotUnavailable',
  /** The client's webhook endpoint did not take the delivery: retried for a few minutes. */
  webhookDeliveryFailed: 'WebhookDeliveryFailed',
  /** Sent with a parent's task token when a chunk job's last try failed: the parent fails, naming the chunk. */
  chunkFailed: 'ChunkFailed',
  /** Sent with a parent's task token when a chunk job of it was canceled. */
  chunkCanceled: 'ChunkCanceled',
  /** Wakes a canceling parent's await-children state when a child settled, to look at its children again. */
  childSettled: 'ChildSettled',
} as const;

export type StepErrorName = (typeof StepError)[keyof typeof StepError];

/** Step Functions' own error names (Amazon States Language) that the workflow matches or reads. */
export const StatesError = {
  all: 'States.ALL',
  timeout: 'States.Timeout',
  heartbeatTimeout: 'States.HeartbeatTimeout',
  taskFailed: 'States.TaskFailed',
  runtime: 'States.Runtime',
} as const;

/**
 * What Step Functions reports when a Lambda invoke fails around the function
 * rather than in it: a throttle, a service error, a function that ran out of
 * time. The service errors are those CDK's LambdaInvoke retries by default.
 */
export const LambdaInvokeError = {
  tooManyRequests: 'Lambda.TooManyRequestsException',
  unknown: 'Lambda.Unknown',
  sandboxTimedOut: 'Sandbox.Timedout',
  clientExecutionTimeout: 'Lambda.ClientExecutionTimeoutException',
  service: 'Lambda.ServiceException',
  awsLambda: 'Lambda.AWSLambdaException',
  sdkClient: 'Lambda.SdkClientException',
} as const;

/** Every error name the workflow may match in a Retry or Catch. */
export const WORKFLOW_ERROR_NAMES: ReadonlySet<string> = new Set([
  ...Object.values(StepError),
  ...Object.values(StatesError),
  ...Object.values(LambdaInvokeError),
]);
