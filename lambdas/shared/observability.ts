import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { METRIC_NAMESPACE, type MetricName, metricCatalog } from '../../config/metrics';

/**
 * One Powertools style for every handler: module-level instances, and
 * {@link instrument} around the handler function for context, cold start and
 * metric flushing. Service name and namespace come from the POWERTOOLS_*
 * environment the stack sets.
 *
 * No Powertools Tracer. It is a wrapper of the X-Ray SDK (aws-xray-sdk-core,
 * cls-hooked, semver: about 110 KiB of every bundle, and their load at every
 * cold start), which AWS has put in maintenance mode in favour of
 * OpenTelemetry. Active tracing does not need it: Lambda records each
 * invocation's segment (initialization, invocation, overhead) itself, and the
 * SDK v3 passes the invocation's trace header on to the services it calls, so
 * the API Gateway -> Lambda -> SQS -> Lambda -> Step Functions chain stays one
 * trace, and every log line carries its `xray_trace_id`. What goes is the
 * inside of an invocation: a subsegment per SDK or HTTP call, the ColdStart
 * and Service annotations and errors as trace metadata. Per-call latency is
 * left to the provider-latency metric and to the logs; a handler that ever
 * needs call-level traces should get OpenTelemetry (the ADOT layer), not the
 * X-Ray SDK back.
 */
export const logger = new Logger();
export const metrics = new Metrics({ namespace: METRIC_NAMESPACE });

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
  if ('rollup' in spec) metrics.singleMetric().addMetric(name, unit, value);
}

/**
 * Wraps a handler: the invocation's Lambda context goes to the logger, so each
 * line names the function and request that wrote it. Powertools keeps that
 * context, and the keys a handler appends, per invocation where an execution
 * environment runs several at once (AWS_LAMBDA_MAX_CONCURRENCY; the local
 * stack, which runs every function in one process, is one), else on the one
 * logger; either way it is set here at each invocation, never once at load.
 */
export function instrument<E, R>(
  handler: (event: E, context: Context) => Promise<R>,
): (event: E, context: Context) => Promise<R> {
  let coldStart = true;
  return async (event, context) => {
    logger.addContext(context);
    if (coldStart) metrics.captureColdStartMetric();
    coldStart = false;
    try {
      return await handler(event, context);
    } finally {
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
      logger.resetKeys();
    }
  };
}
