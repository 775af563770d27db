import type { APIGatewayProxyResult } from 'aws-lambda';
import { type Problem, problem } from '../../config/problems';
import type { ProviderName } from '../../config/providers';
import { LAMBDA_SYNC_REQUEST_BYTES } from '../../config/settings';
import { problemResult } from '../api/http';
import { toProblem } from '../api/problems';
import { ValidationError } from '../domain/errors';
import { JOB_ID_PATTERN } from '../domain/idempotency';
import { SUBMISSION_TAG_PATTERN } from '../domain/job';
import { applyProgress, ProgressMemory, ProgressThrottle } from '../domain/progress';
import { applyProviderEvent } from '../domain/provider-events';
import { logger } from './observability';
import { jobStore } from './ports/job-store';
import { liveChannel } from './ports/live-channel';
import { outputStore } from './ports/output-store';
import { providerAdapter } from './ports/providers';
import { timeline } from './ports/timeline';
import { workflow } from './ports/workflow';

/**
 * A provider's webhook, whichever endpoint it reached (the REST API's route
 * or the provider events function's URL): verified by that provider's
 * adapter (each signs differently) before anything of it is read, then
 * applied to the job and submission its URL names. Progress streams live and
 * is stored about once a second; a final event resumes the waiting step.
 */

/** A webhook as it arrived: header names in lower case, the query's last value of each name, the raw body. */
export interface ProviderWebhookDelivery {
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly query: Readonly<Record<string, string | undefined>>;
  readonly body: Buffer;
}

/**
 * The largest webhook body taken: all that reaches the function. Either
 * endpoint hands a webhook over in a synchronous invocation, whose request
 * Lambda caps (`LAMBDA_SYNC_REQUEST_BYTES`, 6 MB), so Lambda itself refuses
 * a larger one (413) before any of this runs. Providers' events are as
 * large as their work: a Deepgram callback lists every word twice, about
 * 2 MB an hour of speech, so the most it carries is somewhat under three
 * hours with utterances (the event escapes the body's quotes). A publish never nears it (its chunks last at most two hours
 * and list each word once); a longer recording's callback never arrives,
 * and its job ends in review at its timeout, as for any lost callback,
 * rather than in a success without its transcript. The body is never kept
 * on the job or in a workflow state: a completion's output is stored in the
 * output bucket and referenced by key.
 */
export const PROVIDER_EVENT_MAX_BYTES = LAMBDA_SYNC_REQUEST_BYTES;

const now = () => new Date();
/**
 * What this environment last learned of each job: ticks inside a second of
 * that stream without a request, and storage sees about one write per job a
 * second.
 */
const progressMemory = new ProgressMemory(1000);
/** A job whose provider reports progress is alive: its waiting step hears so at most once a minute. */
const heartbeatThrottle = new ProgressThrottle(60_000);

/**
 * Answers the webhook: 204 once applied (or ignored, so the provider stops
 * retrying), else an RFC 9457 problem: 413 for a body larger than Lambda
 * carries, 401 for a signature the provider's adapter refuses, 400 for a URL
 * that names no job or submission or an event that does not parse.
 * `requestId` names the occurrence in a problem's `instance`.
 */
export async function answerProviderWebhook(
  provider: ProviderName,
  delivery: ProviderWebhookDelivery,
  requestId: string,
): Promise<APIGatewayProxyResult> {
  const instance = `urn:longhaul:request:${requestId}`;
  try {
    const refused = await receive(provider, delivery);
    if (refused) return problemResult({ ...refused, instance });
    return { statusCode: 204, headers: { 'cache-control': 'no-store' }, body: '' };
  } catch (error) {
    const mapped = toProblem(error);
    if (mapped.clientError) logger.info('provider event refused', { provider, code: mapped.problem.code });
    else logger.error('provider event failed', error as Error);
    return problemResult({ ...mapped.problem, instance }, mapped.headers);
  }
}

/** Applies the webhook's events; answers the problem it was refused with, if it was. */
async function receive(
  provider: ProviderName,
  delivery: ProviderWebhookDelivery,
): Promise<Problem | undefined> {
  if (delivery.body.length > PROVIDER_EVENT_MAX_BYTES) {
    return problem(
      'payload-too-large',
      `A provider event takes at most ${PROVIDER_EVENT_MAX_BYTES} bytes, what a synchronous Lambda invocation carries.`,
    );
  }
  const adapter = await providerAdapter(provider);
  const request = {
    headers: delivery.headers,
    query: delivery.query,
    body: delivery.body.toString('utf8'),
  };
  const check = adapter.verify(request, Math.floor(Date.now() / 1000));
  if (check !== 'valid') {
    logger.warn('provider event refused', { provider, signature: check });
    return problem('unauthorized', `Missing, stale or invalid ${provider} webhook signature.`);
  }
  const jobId = request.query.jobId;
  if (!jobId || !JOB_ID_PATTERN.test(jobId)) {
    throw new ValidationError('The provider event is invalid.', [
      { parameter: 'jobId', detail: 'must be a job id' },
    ]);
  }
  const submission = request.query.submission;
  if (submission !== undefined && !SUBMISSION_TAG_PATTERN.test(submission)) {
    throw new ValidationError('The provider event is invalid.', [
      { parameter: 'submission', detail: 'must be the submission tag of the webhook URL Longhaul gave' },
    ]);
  }
  logger.appendKeys({ jobId });
  for (const providerEvent of adapter.parse(request)) {
    if (providerEvent.type === 'progress') {
      await applyProgress(
        {
          store: jobStore(),
          live: liveChannel(),
          memory: progressMemory,
          now,
          heartbeat: { throttle: heartbeatThrottle, workflow: workflow() },
        },
        jobId,
        providerEvent.progress,
        { providerJobId: providerEvent.id, submission },
      );
    } else {
      const outcome = await applyProviderEvent(
        { store: jobStore(), workflow: workflow(), timeline: timeline(), now, outputs: outputStore() },
        jobId,
        providerEvent,
        submission,
      );
      logger.info('provider event applied', { provider, outcome });
    }
  }
  return undefined;
}
