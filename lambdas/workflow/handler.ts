import type { Context } from 'aws-lambda';
import { resourceEnv } from '../../config/layout';
import { PROVIDERS } from '../../config/providers';
import { embeddingSettingsOf } from '../../config/settings';
import { jobEventIdOf } from '../domain/events';
import { isTerminal } from '../domain/job';
import { presentJob } from '../domain/present';
import { stepEvent } from '../domain/step-event';
import { type Observation, runStep } from '../domain/workflow';
import { requireEnv, runtimeSettings } from '../shared/env';
import { firstLook, intakeDeps } from '../shared/intake';
import { emit, instrument, logger } from '../shared/observability';
import { eventPublisher } from '../shared/ports/events';
import { inputStore } from '../shared/ports/inputs';
import { mediaStore } from '../shared/ports/media-store';
import { outputStore } from '../shared/ports/output-store';
import { providerAdapter } from '../shared/ports/providers';
import { tenantBacklogs } from '../shared/ports/tenants';
import { vectorIndex } from '../shared/ports/vector-index';
import { workflow } from '../shared/ports/workflow';
import { webhookSigningSecret } from '../shared/secrets';
import { slotFillingDeps } from '../shared/slot-filling';
import { waitingForTokens } from '../shared/token-waits';
import { deliverSignedWebhook, fetchOutput, probeUrl } from '../shared/webhooks';

const settings = runtimeSettings();
/** Where providers post their webhooks: the provider events function's URL, each provider's route's path under it. */
const providerEventsUrl = requireEnv(resourceEnv.providerEventsUrl).replace(/\/+$/, '');

/**
 * What the steps observe, as metrics and, for what an operator must see at
 * the default level (a provider's refusals and pauses, a job that failed or
 * went to review), as one log line each. Reasons are the providers' answers
 * as the errors word them (status, exception name): never a key or a URL.
 */
function observe(observation: Observation): void {
  switch (observation.kind) {
    case 'submitted':
      emit('JobsSubmitted', 1, { jobType: observation.jobType });
      return;
    case 'started':
      emit('JobsStarted', 1);
      emit('QueueWait', observation.queueWaitMs, { jobType: observation.jobType });
      return;
    case 'provider':
      emit('ProviderLatency', observation.latencyMs, { outcome: observation.outcome });
      return;
    case 'throttled': {
      const { kind: _, ...fields } = observation;
      logger.warn('provider throttled', fields);
      return;
    }
    case 'paused': {
      const { kind: _, started, ...fields } = observation;
      logger.warn(started ? 'provider paused' : 'provider already paused', fields);
      return;
    }
    case 'finished': {
      const name = {
        succeeded: 'JobsSucceeded',
        failed: 'JobsFailed',
        needs_review: 'JobsNeedingReview',
      } as const;
      emit(name[observation.status], 1, { jobType: observation.jobType });
      if (observation.durationMs !== undefined) {
        emit('JobDuration', observation.durationMs, { jobType: observation.jobType });
      }
      const why = observation.error && {
        jobType: observation.jobType,
        code: observation.error.code,
        reason: observation.error.message,
      };
      if (why && observation.status === 'failed') logger.error('job failed', why);
      if (why && observation.status === 'needs_review') logger.warn('job needs review', why);
      return;
    }
  }
}

/** One Lambda runs every step of the workflow; the state machine names the step in its payload. */
export const handler = instrument(async (raw: unknown, _context: Context): Promise<unknown> => {
  const event = stepEvent.parse(raw);
  logger.appendKeys({ jobId: event.jobId, step: event.step, executionName: event.executionName });
  if ((event.retryCount ?? 0) > 0) emit('StepRetries', 1, { step: event.step });
  const outputs = outputStore();
  return runStep(
    {
      ...slotFillingDeps(),
      ...waitingForTokens,
      backlogs: tenantBacklogs(),
      firstLook,
      providers: providerAdapter,
      inputs: inputStore(),
      outputs,
      workflow: workflow(),
      maxUploadBytes: settings.maxUploadBytes,
      providerWebhookUrl: (provider) => `${providerEventsUrl}${PROVIDERS[provider].webhookPath}`,
      fetchOutput: (url) => fetchOutput(url, settings.providerSubmitTimeoutMs * 3),
      inputUrlTtlSeconds: settings.uploadUrlTtlSeconds,
      vectors: vectorIndex(),
      events: eventPublisher(),
      intake: intakeDeps(inputStore),
      embedding: embeddingSettingsOf(settings),
      media: mediaStore(),
      mediaGraceSeconds: settings.mediaGraceSeconds,
      providerPause: {
        baseSeconds: settings.providerPauseSeconds,
        maxSeconds: settings.providerPauseMaxSeconds,
      },
      probeUrl: (url) => probeUrl(url, settings.webhookTimeoutMs),
      observe,
      deliverWebhook: async (job) => {
        if (!job.webhookUrl || !isTerminal(job.status)) return 'skipped';
        const outcome = await deliverSignedWebhook({
          url: job.webhookUrl,
          body: JSON.stringify(await presentJob(job, outputs)),
          eventId: jobEventIdOf(job),
          secret: await webhookSigningSecret(),
          timeoutMs: settings.webhookTimeoutMs,
          allowPrivate: settings.allowPrivateWebhooks,
        });
        if (outcome === 'refused') logger.warn('webhook target refused');
        return outcome === 'sent' ? 'sent' : 'skipped';
      },
    },
    event,
  );
});
