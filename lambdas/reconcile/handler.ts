import type { Context } from 'aws-lambda';
import { TENANT_USAGE_LOG } from '../../config/metrics';
import { PROVIDER_NAMES } from '../../config/providers';
import { cancelJob } from '../domain/intake';
import { retireDue } from '../domain/media-library';
import { FIX_KINDS, reconcile } from '../domain/reconcile';
import { runtimeSettings } from '../shared/env';
import { firstLook } from '../shared/intake';
import { emit, instrument, logger } from '../shared/observability';
import { eventPublisher } from '../shared/ports/events';
import { inputStore } from '../shared/ports/inputs';
import { liveJobStore } from '../shared/ports/live-channel';
import { mediaStore } from '../shared/ports/media-store';
import { outputStore } from '../shared/ports/output-store';
import { providerAdapter } from '../shared/ports/providers';
import { reconcilerProgress } from '../shared/ports/reconciler-progress';
import { tenantBacklogs } from '../shared/ports/tenants';
import { timeline } from '../shared/ports/timeline';
import { vectorIndex } from '../shared/ports/vector-index';
import { workflow } from '../shared/ports/workflow';
import { slotFillingDeps } from '../shared/slot-filling';
import { waitingForTokens } from '../shared/token-waits';

const settings = runtimeSettings();
/** Active jobs read per index query. */
const PAGE_SIZE = 100;

/** One reconciliation pass, run on a schedule; overlapping passes are safe. */
export const handler = instrument(async (_event: unknown, context: Context) => {
  const report = await reconcile(
    {
      ...slotFillingDeps(),
      ...waitingForTokens,
      workflow: workflow(),
      providers: providerAdapter,
      events: eventPublisher(),
      outputs: outputStore(),
      vectors: vectorIndex(),
      queuedGraceMs: settings.queuedGraceMs,
      jobTimeoutMs: settings.jobTimeoutMs,
      slotWaitMaxSeconds: settings.slotWaitMaxSeconds,
      pageSize: PAGE_SIZE,
      // Half the function's time for the active jobs; the rest covers the slots and hand-offs after them.
      budgetMs: context.getRemainingTimeInMillis() / 2,
      progress: reconcilerProgress(),
      backlogs: tenantBacklogs(),
      firstLook,
      promotionsPerPass: settings.schedulePromotionsPerPass,
    },
    (jobId, error) => logger.error('reconciling a job failed', { jobId, error: error as Error }),
  );
  // What replaced, superseded and deleted media versions made goes once its time has come.
  const retired = await retireDue(
    {
      media: mediaStore(),
      now: () => new Date(),
      jobs: liveJobStore(),
      timeline: timeline(),
      workflow: workflow(),
      quietSeconds: settings.computeTimeoutSeconds,
      outputs: outputStore(),
      vectors: vectorIndex(),
      deleteInput: (tenantId, ref) => inputStore().deleteInput(tenantId, ref),
      cancel: async (job) => {
        await cancelJob(
          {
            store: liveJobStore(),
            workflow: workflow(),
            timeline: timeline(),
            events: eventPublisher(),
            now: () => new Date(),
          },
          job.tenantId,
          job.id,
        );
      },
    },
    settings.mediaRetirementsPerPass,
  ).catch((error: unknown) => {
    logger.error('retiring media versions failed', { error: error as Error });
    return 0;
  });
  if (retired > 0) emit('ReconcilerFixes', retired, { kind: 'media_retired' });
  for (const kind of FIX_KINDS) {
    if (report.fixes[kind] > 0) emit('ReconcilerFixes', report.fixes[kind], { kind });
  }
  for (const [jobType, count] of Object.entries(report.reviewedByType))
    emit('JobsNeedingReview', count, { jobType });
  for (const [provider, inFlight] of Object.entries(report.inFlightByProvider))
    emit('InFlight', inFlight, { provider });
  for (const provider of PROVIDER_NAMES)
    emit('ProviderPaused', report.pausedProviders.includes(provider) ? 1 : 0, { provider });
  emit('JobsInReview', report.inReview);
  emit('ReconcilerItemsRead', report.itemsRead);
  emit('ReconcilerErrors', report.errors);
  const fixes = Object.values(report.fixes).reduce((sum, count) => sum + count, 0);
  // One line per tenant a pass recounted: the dashboard's per-tenant table reads them (a tenant is
  // never a metric dimension, so thousands of tenants cost no custom metrics).
  for (const usage of report.tenants) logger.info(TENANT_USAGE_LOG.message, { ...usage });
  // Quiet passes are the norm; only a pass that changed something or failed is worth a line at INFO.
  if (fixes > 0 || report.errors > 0) logger.info('reconciliation pass', { ...report });
  else logger.debug('reconciliation pass', { ...report });
  return report;
});
