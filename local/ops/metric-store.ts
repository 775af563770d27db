import { type MetricName, metricCatalog } from '../../config/metrics';
import type { MetricDatum } from './emf';

/**
 * The captured metrics, kept the way CloudWatch keeps them: one series per
 * metric name and dimension set, with the sum and sample count of each
 * period (one minute, and ten seconds for the live chart), plus the raw
 * values of millisecond metrics for percentiles over a recent window. Old
 * periods are dropped, so memory stays bounded however long the stack runs;
 * the totals since start are kept apart.
 */

export const MINUTE_MS = 60_000;
export const TEN_SECONDS_MS = 10_000;
/** How long per-minute periods are kept. */
export const MINUTES_KEPT = 60;
/** The live chart's span, in ten-second periods. */
export const RATE_WINDOW_MS = 10 * MINUTE_MS;
/** Percentiles are over the values of this recent window, as a dashboard widget's period would be. */
export const LATENCY_WINDOW_MS = 10 * MINUTE_MS;
/** At most this many values per series for percentiles; past it the oldest go first. */
const MAX_VALUES = 10_000;

export interface Period {
  /** Start of the period, ISO-8601. */
  readonly at: string;
  readonly sum: number;
  readonly count: number;
}

export interface Percentiles {
  readonly p50: number | null;
  readonly p90: number | null;
  readonly p99: number | null;
  /** How many values the percentiles are over. */
  readonly samples: number;
}

export interface SeriesView {
  readonly name: string;
  readonly unit: string;
  readonly dimensions: Readonly<Record<string, string>>;
  /** Since the stack started. */
  readonly sum: number;
  readonly sampleCount: number;
  /** The last hour's minutes that have data, oldest first. */
  readonly minutes: readonly Period[];
}

interface Bucket {
  sum: number;
  count: number;
}

interface Series {
  readonly name: string;
  readonly unit: string;
  readonly dimensions: Readonly<Record<string, string>>;
  sum: number;
  sampleCount: number;
  readonly minutes: Map<number, Bucket>;
  readonly tens: Map<number, Bucket>;
  /** Millisecond metrics only: the values of the latency window, oldest first. */
  readonly values: { at: number; value: number }[];
}

const periodStart = (at: number, size: number) => Math.floor(at / size) * size;

function add(buckets: Map<number, Bucket>, start: number, value: number): void {
  const bucket = buckets.get(start);
  if (bucket) {
    bucket.sum += value;
    bucket.count += 1;
  } else {
    buckets.set(start, { sum: value, count: 1 });
  }
}

function dropBefore(buckets: Map<number, Bucket>, oldest: number): void {
  for (const start of buckets.keys()) if (start < oldest) buckets.delete(start);
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

export class MetricStore {
  readonly #series = new Map<string, Series>();

  constructor(private readonly now: () => number = Date.now) {}

  record(datum: MetricDatum): void {
    const dimensions = Object.fromEntries(
      Object.keys(datum.dimensions)
        .sort()
        .map((dimension) => [dimension, datum.dimensions[dimension] as string]),
    );
    const key = `${datum.name}\n${JSON.stringify(dimensions)}`;
    let series = this.#series.get(key);
    if (!series) {
      series = {
        name: datum.name,
        unit: datum.unit,
        dimensions,
        sum: 0,
        sampleCount: 0,
        minutes: new Map(),
        tens: new Map(),
        values: [],
      };
      this.#series.set(key, series);
    }
    series.sum += datum.value;
    series.sampleCount += 1;
    add(series.minutes, periodStart(datum.at, MINUTE_MS), datum.value);
    add(series.tens, periodStart(datum.at, TEN_SECONDS_MS), datum.value);
    if (datum.unit === 'Milliseconds') series.values.push({ at: datum.at, value: datum.value });
    this.#prune(series);
  }

  /** Sum since start of a catalog metric over all values of its catalog dimensions. */
  total(name: MetricName): number {
    return this.#catalogSeries(name).reduce((sum, series) => sum + series.sum, 0);
  }

  /** Sum since start of a catalog metric per value of one of its dimensions. */
  totalBy(name: MetricName, dimension: string): Record<string, number> {
    const totals: Record<string, number> = {};
    for (const series of this.#catalogSeries(name)) {
      const value = series.dimensions[dimension] ?? 'unknown';
      totals[value] = (totals[value] ?? 0) + series.sum;
    }
    return totals;
  }

  /** Ten-second sums of the given catalog metrics over the rate window, oldest first, empty periods included. */
  rates<N extends string>(metrics: Readonly<Record<N, MetricName>>): ({ at: string } & Record<N, number>)[] {
    const last = periodStart(this.now(), TEN_SECONDS_MS);
    const first = last - RATE_WINDOW_MS + TEN_SECONDS_MS;
    const periods: ({ at: string } & Record<N, number>)[] = [];
    for (let start = first; start <= last; start += TEN_SECONDS_MS) {
      const period = { at: new Date(start).toISOString() } as { at: string } & Record<N, number>;
      for (const [field, name] of Object.entries(metrics) as [N, MetricName][]) {
        let sum = 0;
        for (const series of this.#catalogSeries(name)) sum += series.tens.get(start)?.sum ?? 0;
        (period as Record<N, number>)[field] = sum;
      }
      periods.push(period);
    }
    return periods;
  }

  /** p50, p90 and p99 of a catalog millisecond metric over the latency window, across its dimension values. */
  percentiles(name: MetricName): Percentiles {
    const oldest = this.now() - LATENCY_WINDOW_MS;
    const values = this.#catalogSeries(name)
      .flatMap((series) => series.values.filter((v) => v.at >= oldest).map((v) => v.value))
      .sort((a, b) => a - b);
    return {
      p50: percentile(values, 50),
      p90: percentile(values, 90),
      p99: percentile(values, 99),
      samples: values.length,
    };
  }

  /** Every series, as a metrics listing shows them. */
  series(): SeriesView[] {
    const oldest = periodStart(this.now(), MINUTE_MS) - (MINUTES_KEPT - 1) * MINUTE_MS;
    return [...this.#series.values()]
      .map((series) => ({
        name: series.name,
        unit: series.unit,
        dimensions: series.dimensions,
        sum: series.sum,
        sampleCount: series.sampleCount,
        minutes: [...series.minutes]
          .filter(([start]) => start >= oldest)
          .sort(([a], [b]) => a - b)
          .map(([start, bucket]) => ({ at: new Date(start).toISOString(), ...bucket })),
      }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * The series of a catalog metric that carry exactly its catalog dimensions
   * plus `service`, which is what a CloudWatch query for it matches.
   */
  #catalogSeries(name: MetricName): Series[] {
    const wanted = ['service', ...metricCatalog[name].dimensions].sort().join(',');
    return [...this.#series.values()].filter(
      (series) => series.name === name && Object.keys(series.dimensions).join(',') === wanted,
    );
  }

  #prune(series: Series): void {
    const now = this.now();
    dropBefore(series.minutes, periodStart(now, MINUTE_MS) - MINUTES_KEPT * MINUTE_MS);
    dropBefore(series.tens, periodStart(now, TEN_SECONDS_MS) - RATE_WINDOW_MS);
    const oldest = now - LATENCY_WINDOW_MS;
    let stale = 0;
    while (stale < series.values.length && (series.values[stale] as { at: number }).at < oldest) stale++;
    series.values.splice(0, Math.max(stale, series.values.length - MAX_VALUES));
  }
}
