import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import type { Context } from 'aws-lambda';
import { METRIC_NAMESPACE, type MetricName, metricCatalog } from '../../config/metrics';

/**
 * One Powertools style for every handler: module-level instances, and
 * {@link instrument} around the handler function for context, cold start,
 * tracing and metric flushing. Service name and namespace come from the
 * POWERTOOLS_* environment the stack sets.
 */
export const logger = new Logger();
export const metrics = new Metrics({ namespace: METRIC_NAMESPACE });
export const tracer = new Tracer();

/**
 * Emits one metric of the catalog (config/metrics.ts). Metrics with
 * dimensions go out on their own, so each carries exactly its catalog
 * dimensions (plus `service`).
 */
export function emit(
  name: MetricName,
  value: number,
  dimensions: Readonly<Record<string, string>> = {},
): void {
  const spec = metricCatalog[name];
  const unit = spec.unit === 'Milliseconds' ? MetricUnit.Milliseconds : MetricUnit.Count;
  if (spec.dimensions.length === 0) {
    metrics.addMetric(name, unit, value);
    return;
  }
  const single = metrics.singleMetric();
  for (const dimension of spec.dimensions) single.addDimension(dimension, dimensions[dimension] ?? 'unknown');
  single.addMetric(name, unit, value);
}

export function instrument<E, R>(
  name: string,
  handler: (event: E, context: Context) => Promise<R>,
): (event: E, context: Context) => Promise<R> {
  let coldStart = true;
  return async (event, context) => {
    logger.addContext(context);
    const parent = tracer.getSegment();
    const segment = parent?.addNewSubsegment(`## ${name}`);
    if (segment) tracer.setSegment(segment);
    if (coldStart) {
      metrics.captureColdStartMetric();
      tracer.annotateColdStart();
    }
    coldStart = false;
    tracer.addServiceNameAnnotation();
    try {
      return await handler(event, context);
    } catch (error) {
      if (segment) tracer.addErrorAsMetadata(error as Error);
      throw error;
    } finally {
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
      logger.resetKeys();
      if (segment && parent) {
        segment.close();
        tracer.setSegment(parent);
      }
    }
  };
}
