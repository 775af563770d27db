import type { Context } from 'aws-lambda';
import { FIX_KINDS, reconcile } from '../domain/reconcile';
import { jobQueue, liveJobStore, provider, slotPool, timeline, workflow } from '../shared/aws';
import { runtimeSettings } from '../shared/env';
import { instrument, logger, metrics } from '../shared/observability';

const settings = runtimeSettings();
/** Active jobs read per index query. */
const PAGE_SIZE = 100;

/** One reconciliation pass, run on a schedule; overlapping passes are safe. */
export const handler = instrument('reconcile', async (_event: unknown, _context: Context) => {
  const report = await reconcile(
    {
      store: liveJobStore(),
      slots: slotPool(),
      workflow: workflow(),
      queue: jobQueue(),
      provider: await provider(),
      timeline: timeline(),
      now: () => new Date(),
      maxInFlight: settings.maxInFlight,
      queuedGraceMs: settings.queuedGraceMs,
      jobTimeoutMs: settings.jobTimeoutMs,
      slotWaitMaxSeconds: settings.slotWaitMaxSeconds,
      pageSize: PAGE_SIZE,
    },
    (jobId, error) => logger.error('reconciling a job failed', { jobId, error: error as Error }),
  );
  for (const kind of FIX_KINDS) {
    if (report.fixes[kind] === 0) continue;
    const metric = metrics.singleMetric();
    metric.addDimension('kind', kind);
    metric.addMetric('ReconcilerFixes', 'Count', report.fixes[kind]);
  }
  metrics.addMetric('ReconcilerItemsRead', 'Count', report.itemsRead);
  metrics.addMetric('ReconcilerErrors', 'Count', report.errors);
  logger.info('reconciliation pass', { ...report });
  return report;
});
