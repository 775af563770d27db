/**
 * How the local stack prints what the handlers log. The handlers write
 * Powertools' JSON log records, as CloudWatch Logs receives them in AWS; a
 * terminal running a few dozen jobs would scroll thousands of lines of it. So
 * the stack's stdout and stderr are wrapped (as ./ops/capture.ts wraps stdout
 * for the metrics) and each record is printed as one line:
 *
 *     12:00:01.234 api             INFO  job accepted jobId=job_… tenantId=acme
 *
 * or, with LOG_FORMAT=json, as the record itself on one line (for jq). Only
 * whole records written at once are rewritten (Powertools writes each record
 * with one `console` call); every other write goes through untouched.
 */

export const LOG_FORMATS = ['short', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** A Powertools log record: its standard keys, then whatever the handler appended. */
type LogRecord = Record<string, unknown> & { level: string; message: string; timestamp: string };

/** Keys every record carries; the short line says what they say with its time, function and level. */
const STANDARD_KEYS = new Set([
  'level',
  'message',
  'timestamp',
  'service',
  'sampling_rate',
  'xray_trace_id',
  'cold_start',
  'function_name',
  'function_arn',
  'function_memory_size',
  'function_request_id',
  'correlation_id',
]);

/** The local functions' names are `longhaul-<service>`; the short line shows the service. */
const FUNCTION_PREFIX = 'longhaul-';
/** As wide as the longest function's service name, `provider-events`, so messages line up. */
const FUNCTION_WIDTH = 15;
/** Appended keys shown at most; a record is one line however much it carries. */
const MOST_FIELDS = 8;
/** A longer value is cut, so a line stays a line. */
const LONGEST_VALUE = 120;

function asRecord(text: string): LogRecord | undefined {
  if (!text.startsWith('{') || !text.trimEnd().endsWith('}')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const record = parsed as Partial<LogRecord> | null;
  return typeof record?.level === 'string' &&
    typeof record.message === 'string' &&
    typeof record.timestamp === 'string'
    ? (record as LogRecord)
    : undefined;
}

const twoDigits = (n: number) => String(n).padStart(2, '0');

/** The record's time of day on this machine's clock, to the millisecond. */
function timeOfDay(timestamp: string): string {
  const at = new Date(timestamp);
  if (Number.isNaN(at.getTime())) return timestamp;
  const ms = String(at.getMilliseconds()).padStart(3, '0');
  return `${twoDigits(at.getHours())}:${twoDigits(at.getMinutes())}:${twoDigits(at.getSeconds())}.${ms}`;
}

function shown(value: string): string {
  const cut = value.length > LONGEST_VALUE ? `${value.slice(0, LONGEST_VALUE - 1)}…` : value;
  return /^[^\s"=]+$/.test(cut) ? cut : JSON.stringify(cut);
}

/** `key=value` for a value worth a glance: a scalar, or an error's name and message; nested data is left to LOG_FORMAT=json. */
function field(key: string, value: unknown): string | undefined {
  if (typeof value === 'string') return `${key}=${shown(value)}`;
  if (typeof value === 'number' || typeof value === 'boolean') return `${key}=${value}`;
  const error = value as { name?: unknown; message?: unknown } | null;
  if (typeof error?.message === 'string') {
    const name = typeof error.name === 'string' ? `${error.name}: ` : '';
    return `${key}=${shown(`${name}${error.message}`)}`;
  }
  return undefined;
}

/** One Powertools log record as one short line (no newline). */
export function shortLogLine(record: LogRecord): string {
  const name = typeof record.function_name === 'string' ? record.function_name : String(record.service ?? '');
  const fn = name.startsWith(FUNCTION_PREFIX) ? name.slice(FUNCTION_PREFIX.length) : name;
  const fields = Object.entries(record)
    .filter(([key]) => !STANDARD_KEYS.has(key))
    .map(([key, value]) => field(key, value))
    .filter((text): text is string => text !== undefined)
    .slice(0, MOST_FIELDS);
  const message = record.message.replace(/\s*\n\s*/g, ' ');
  return [
    timeOfDay(record.timestamp),
    fn.padEnd(FUNCTION_WIDTH),
    record.level.padEnd(5),
    [message, ...fields].join(' '),
  ].join(' ');
}

/** The text of a write, if it may be one whole record. */
function textOf(chunk: unknown): string | undefined {
  if (typeof chunk === 'string') return chunk;
  if (chunk instanceof Uint8Array && chunk[0] === 0x7b /* { */) {
    return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('utf8');
  }
  return undefined;
}

/**
 * Rewrites the log records written to `streams` in `format`; the returned
 * function puts each stream's own `write` back.
 */
export function printHandlerLogs(
  format: LogFormat,
  streams: readonly NodeJS.WriteStream[] = [process.stdout, process.stderr],
): () => void {
  const restores = streams.map((stream) => {
    const original = stream.write;
    const write = function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]): boolean {
      const text = textOf(chunk);
      const record = text?.endsWith('\n') ? asRecord(text) : undefined;
      const line = record && (format === 'json' ? JSON.stringify(record) : shortLogLine(record));
      return (original as (...args: unknown[]) => boolean).apply(this, [
        line === undefined ? chunk : `${line}\n`,
        ...rest.filter((argument) => line === undefined || typeof argument === 'function'),
      ]);
    };
    stream.write = write as typeof stream.write;
    return () => {
      if (stream.write === write) stream.write = original;
    };
  });
  return () => {
    for (const restore of restores) restore();
  };
}
