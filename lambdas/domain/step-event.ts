import * as z from 'zod';
import { WORKFLOW_STEPS } from '../../config/layout';

/**
 * What the state machine sends the steps function: one schema, strict, so a
 * key the state machine sends that is not listed here fails the step loudly
 * instead of being dropped on the way (a construct test holds every Task of
 * the synthesized state machine to it), and the steps read `StepEvent`, its
 * type. The items inside (a chunk, a run, what the embed states answered)
 * are other steps' answers handed on whole by the state machine (`split`'s
 * `StoredChunk`, `plan-embedding`'s `EmbeddingRun`, an embedding job's
 * `EmbeddedRun`): strict as well, so an answer that grows a key the steps
 * would drop fails where it is handed on.
 */
export const stepEvent = z.strictObject({
  step: z.enum(WORKFLOW_STEPS),
  jobId: z.string().min(1),
  /** `$$.State.RetryCount`: 0 on the first try. */
  retryCount: z.number().int().min(0).optional(),
  /** `$$.Execution.Name`: a step of an execution that is no longer the job's current run changes nothing. */
  executionName: z.string().optional(),
  /** `$$.StateMachine.Id`, given to the steps that may free a slot: the next job's execution starts there. */
  stateMachineArn: z.string().optional(),
  /** The token of a step that waits for a job (the provider's, or a child job). */
  taskToken: z.string().optional(),
  /** What a Catch clause caught (Step Functions' `{Error, Cause}`), for the failure and review steps. */
  error: z.strictObject({ Error: z.string(), Cause: z.string().optional() }).optional(),
  /** The state whose failure took the failure path (`park`'s, for the state a resume goes back to). */
  failedAt: z.string().min(1).optional(),
  /** The chunk a `transcribe` state waits for (an item of the split step's answer). */
  chunk: z
    .strictObject({
      index: z.number().int().min(0),
      key: z.string().min(1),
      offsetSeconds: z.number().min(0),
      durationSeconds: z.number().min(0),
      idempotencyKey: z.string().min(1),
    })
    .optional(),
  /** The run of passages an `embed` state waits for (an item of `plan-embedding`'s answer). */
  run: z
    .strictObject({
      index: z.number().int().min(0),
      from: z.number().int().min(0),
      count: z.number().int().min(1),
      idempotencyKey: z.string().min(1),
    })
    .optional(),
  /** Where the passages to embed are (`plan-embedding`'s answer). */
  passagesKey: z.string().min(1).optional(),
  /** What the `embed` states answered, for `store-vectors`. */
  embedded: z.array(z.strictObject({ index: z.number().int().min(0), jobId: z.string().min(1) })).optional(),
});

export type StepEvent = z.infer<typeof stepEvent>;

/** The error a Catch clause hands to the failure and review steps. */
export type CaughtError = NonNullable<StepEvent['error']>;
