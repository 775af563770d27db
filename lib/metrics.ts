import type { Duration } from 'aws-cdk-lib';
import { MathExpression, Metric } from 'aws-cdk-lib/aws-cloudwatch';
import { WORKFLOW_STEPS } from '../config/layout';
import {
  FIX_KINDS,
  JOB_TYPE_VALUES,
  METRIC_NAMESPACE,
  type MetricName,
  type MetricSpec,
  metricCatalog,
  PROVIDER_OUTCOMES,
  PROVIDER_VALUES,
  RESOLUTION_OUTCOMES,
  type Service,
} from '../config/metrics';

/** A metric Longhaul emits (config/metrics.ts). */
export type LonghaulMetricName = MetricName;

const specs: Readonly<Record<LonghaulMetricName, MetricSpec>> = metricCatalog;

/** Every value the runtime gives `dimension` of `name`; the dashboard and alarms plot one series per value. */
export function dimensionValues(name: LonghaulMetricName, dimension: string): readonly string[] {
  switch (dimension) {
    case 'jobType':
      return JOB_TYPE_VALUES;
    case 'provider':
      return PROVIDER_VALUES;
    case 'step':
      return WORKFLOW_STEPS;
    case 'kind':
      return FIX_KINDS;
    case 'outcome':
      if (name === 'ProviderLatency') return PROVIDER_OUTCOMES;
      if (name === 'JobsResolved') return RESOLUTION_OUTCOMES;
  }
  throw new Error(
    `lib/metrics.ts: the values of dimension ${dimension} of ${name} are not known; list them in dimensionValues`,
  );
}

/** One time series of a Longhaul metric: the function that emits it and a value for each of its dimensions. */
export interface LonghaulSeries {
  readonly name: LonghaulMetricName;
  readonly service: Service;
  /** A value for every dimension the catalog gives the metric (besides `service`). */
  readonly dimensions: Readonly<Record<string, string>>;
}

export interface LonghaulMetricOptions {
  /** `Sum`, `Maximum`, `p99`, … */
  readonly statistic: string;
  readonly period: Duration;
  /** @default - CloudWatch's own label */
  readonly label?: string;
}

/**
 * The CloudWatch metric of one series as the runtime emits it through
 * Powertools EMF: namespace `Longhaul`, dimension `service` (the function's
 * POWERTOOLS_SERVICE_NAME) plus exactly the catalog's dimensions. Throws for a
 * service or dimension the catalog does not list, so a plotted series always
 * matches an emitted one.
 */
export function longhaulMetric(series: LonghaulSeries, options: LonghaulMetricOptions): Metric {
  const spec = specs[series.name];
  if (!(spec.services as readonly string[]).includes(series.service)) {
    throw new Error(
      `lib/metrics.ts: ${series.name} is emitted by ${spec.services.join(', ')}, not by ${series.service}`,
    );
  }
  const given = Object.keys(series.dimensions).sort();
  const rolledUp = spec.rollup === true && given.length === 0;
  if (!rolledUp && given.join() !== [...spec.dimensions].sort().join()) {
    throw new Error(
      `lib/metrics.ts: ${series.name} has dimensions [${spec.dimensions.join(', ')}], got [${given.join(', ')}]`,
    );
  }
  return new Metric({
    namespace: METRIC_NAMESPACE,
    metricName: series.name,
    dimensionsMap: { service: series.service, ...series.dimensions },
    statistic: options.statistic,
    period: options.period,
    label: options.label,
  });
}

/** Every series `name` is emitted as: each emitting service with each combination of its dimension values. */
export function longhaulSeries(name: LonghaulMetricName): LonghaulSeries[] {
  const spec = specs[name];
  let combinations: Record<string, string>[] = [{}];
  for (const dimension of spec.dimensions) {
    combinations = combinations.flatMap((partial) =>
      dimensionValues(name, dimension).map((value) => ({ ...partial, [dimension]: value })),
    );
  }
  return spec.services.flatMap((service) =>
    combinations.map((dimensions) => ({ name, service, dimensions })),
  );
}

/**
 * The sum of every series of `name` (see {@link longhaulSeries}) as one
 * metric-math line, e.g. jobs failed of every job type. A series with no
 * datapoint in a period counts as 0, so one quiet job type does not blank the
 * total.
 */
export function longhaulTotal(
  name: LonghaulMetricName,
  options: { readonly period: Duration; readonly label: string },
): MathExpression {
  const id = `${name.charAt(0).toLowerCase()}${name.slice(1)}`;
  // A metric rolled up per service is summed from those series alone (config/metrics.ts `rollup`).
  const series = specs[name].rollup
    ? specs[name].services.map((service) => ({ name, service, dimensions: {} }))
    : longhaulSeries(name);
  const usingMetrics = Object.fromEntries(
    series.map((series, index) => [
      `${id}${index}`,
      longhaulMetric(series, { statistic: 'Sum', period: options.period }),
    ]),
  );
  const terms = Object.keys(usingMetrics).map((metricId) => `FILL(${metricId}, 0)`);
  return new MathExpression({
    expression: `SUM([${terms.join(', ')}])`,
    usingMetrics,
    period: options.period,
    label: options.label,
  });
}
