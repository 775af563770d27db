import { METRIC_NAMESPACE } from '../../config/metrics';

/**
 * Reading CloudWatch embedded metric format (EMF) lines, as Powertools writes
 * them: a JSON object whose `_aws.CloudWatchMetrics` directives name the
 * metrics and dimension sets, with the values and dimension values as
 * top-level members. CloudWatch turns each (metric, dimension set) pair into
 * one data point per value; so does {@link readEmfLine}.
 */

/** Every EMF line Powertools writes starts with this, so other output is told apart without parsing it. */
export const EMF_PREFIX = '{"_aws":';

export interface MetricDatum {
  readonly name: string;
  readonly unit: string;
  readonly value: number;
  readonly dimensions: Readonly<Record<string, string>>;
  /** Epoch milliseconds: the line's `_aws.Timestamp`, which is when CloudWatch files the value. */
  readonly at: number;
}

interface Directive {
  readonly Namespace?: unknown;
  readonly Dimensions?: unknown;
  readonly Metrics?: unknown;
}

/** The data points of one line in the Longhaul namespace, or undefined when the line is not EMF. */
export function readEmfLine(line: string): MetricDatum[] | undefined {
  if (!line.startsWith(EMF_PREFIX)) return undefined;
  let root: Record<string, unknown>;
  try {
    root = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const aws = root._aws as { Timestamp?: unknown; CloudWatchMetrics?: unknown } | undefined;
  if (!aws || typeof aws.Timestamp !== 'number' || !Array.isArray(aws.CloudWatchMetrics)) return undefined;
  const at = aws.Timestamp;
  const data: MetricDatum[] = [];
  for (const directive of aws.CloudWatchMetrics as Directive[]) {
    if (directive.Namespace !== METRIC_NAMESPACE || !Array.isArray(directive.Metrics)) continue;
    const sets =
      Array.isArray(directive.Dimensions) && directive.Dimensions.length > 0 ? directive.Dimensions : [[]];
    for (const definition of directive.Metrics as { Name?: unknown; Unit?: unknown }[]) {
      if (typeof definition.Name !== 'string') continue;
      const raw = root[definition.Name];
      const values = (Array.isArray(raw) ? raw : [raw]).filter((v): v is number => typeof v === 'number');
      const unit = typeof definition.Unit === 'string' ? definition.Unit : 'None';
      for (const set of sets as unknown[]) {
        if (!Array.isArray(set)) continue;
        const dimensions: Record<string, string> = {};
        for (const dimension of set) {
          if (typeof dimension === 'string') dimensions[dimension] = String(root[dimension] ?? '');
        }
        for (const value of values) data.push({ name: definition.Name, unit, value, dimensions, at });
      }
    }
  }
  return data;
}
