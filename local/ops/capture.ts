import { currentInvocation, type Invocation } from '../lambda';
import { EMF_PREFIX, type MetricDatum, readEmfLine } from './emf';

/**
 * Captures the EMF lines the handlers write. In Lambda they go to stdout and
 * CloudWatch Logs extracts the metrics; here every handler runs in this
 * process, so stdout's `write` is wrapped instead. Powertools writes each
 * line with one `console.log`, hence one `write` of one whole line, which is
 * all that is looked at; everything else, and every write that is not a
 * complete EMF line, goes through untouched.
 */

export interface CaptureOptions {
  readonly stream: NodeJS.WriteStream;
  /** Called synchronously within the write, so `invocation` is the one that emitted the metrics. */
  readonly onMetrics: (data: readonly MetricDatum[], invocation: Invocation | undefined) => void;
  /**
   * Whether a captured line still reaches the stream. With POWERTOOLS_DEV (the
   * local default) the console is for people and never showed EMF; without
   * it, the console looks like Lambda's log stream, EMF included.
   */
  readonly echo: () => boolean;
  /** Where a failure of `onMetrics` is reported; the handler's write never fails for it. */
  readonly log: (line: string) => void;
}

const PREFIX_BYTES = Buffer.from(EMF_PREFIX, 'utf8');

function emfText(chunk: unknown): string | undefined {
  if (typeof chunk === 'string') return chunk.startsWith(EMF_PREFIX) ? chunk : undefined;
  if (!(chunk instanceof Uint8Array)) return undefined;
  const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  return bytes.subarray(0, PREFIX_BYTES.length).equals(PREFIX_BYTES) ? bytes.toString('utf8') : undefined;
}

/** Starts capturing; the returned function puts the stream's own `write` back. */
export function captureEmf(options: CaptureOptions): () => void {
  const { stream, onMetrics, echo, log } = options;
  const original = stream.write;
  let failures = 0;
  const write = function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]): boolean {
    const text = emfText(chunk);
    // One complete line: a trailing newline and no other.
    const line =
      text?.endsWith('\n') && text.indexOf('\n') === text.length - 1 ? text.slice(0, -1) : undefined;
    const data = line === undefined ? undefined : readEmfLine(line);
    if (data) {
      try {
        onMetrics(data, currentInvocation());
      } catch (error) {
        // Reported a few times, not on every metric of a long run.
        if (failures++ < 3) log(`ops: a captured metric line was not recorded: ${String(error)}`);
      }
      if (!echo()) {
        const callback = rest.find((argument) => typeof argument === 'function') as (() => void) | undefined;
        if (callback) process.nextTick(callback);
        return true;
      }
    }
    return (original as (...args: unknown[]) => boolean).apply(this, [chunk, ...rest]);
  };
  stream.write = write as typeof stream.write;
  return () => {
    if (stream.write === write) stream.write = original;
  };
}
