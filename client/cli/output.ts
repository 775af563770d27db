import type { AdminJob, BatchItemResult, Job, Page, TimelineEvent } from '../types';
import type { WaitUpdate } from '../wait';

/** How the CLI shows things to people; `--json` bypasses all of this. */

export interface Stream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

export function formatJob(job: Job | AdminJob): string {
  const fields: [string, string][] = [];
  const field = (name: string, value: string | undefined) => {
    if (value !== undefined) fields.push([name, value]);
  };
  if ('tenantId' in job) field('tenant', job.tenantId);
  field('idempotency key', job.idempotencyKey);
  field('priority', job.priority);
  field('input', JSON.stringify(job.input));
  field('attempts', String(job.attempts));
  field('created', job.createdAt);
  // Only for a job that was asked to run at another time than its creation.
  if (job.runAt !== job.createdAt) field('run at', job.runAt);
  field('started', job.startedAt);
  field('finished', job.finishedAt);
  if (job.webhookUrl !== undefined) field('webhook', job.webhookUrl);
  if (job.error) field('error', `${job.error.code}: ${job.error.message}`);
  for (const [name, value] of Object.entries(job.result ?? {})) {
    field(`result.${name}`, typeof value === 'string' ? value : JSON.stringify(value));
  }
  const width = Math.max(...fields.map(([name]) => name.length)) + 2;
  const lines = [
    `${job.id}  ${job.type}  ${job.status}  ${job.progress}%`,
    ...fields.map(([name, value]) => `  ${name.padEnd(width)}${value}`),
  ];
  return `${lines.join('\n')}\n`;
}

/** One line per batch item, in item order: its status and key, then its job or why it was refused. */
export function formatBatchResults(results: readonly BatchItemResult[]): string {
  return results
    .map((result) => {
      const head = `${result.status}  ${result.idempotencyKey ?? '(no key)'}`;
      if (result.job) {
        return `${head}  ${result.job.id}  ${result.job.status}${result.replayed ? '  (already submitted)' : ''}\n`;
      }
      const problem = result.problem;
      const fields = (problem?.errors ?? []).map(
        (error) => `\n    ${error.pointer ?? error.parameter ?? ''}: ${error.detail}`,
      );
      return `${head}  ${problem?.code ?? 'refused'}: ${problem?.detail ?? ''}${fields.join('')}\n`;
    })
    .join('');
}

export function formatJobTable(page: Pick<Page<Job | AdminJob>, 'items'>): string {
  if (page.items.length === 0) return 'no jobs\n';
  const withTenant = page.items.some((job) => 'tenantId' in job);
  const header = ['ID', 'TYPE', 'STATUS', 'PROGRESS', 'CREATED', ...(withTenant ? ['TENANT'] : [])];
  const rows = page.items.map((job) => [
    job.id,
    job.type,
    job.status,
    `${job.progress}%`,
    job.createdAt,
    ...('tenantId' in job ? [job.tenantId] : []),
  ]);
  return table([header, ...rows]);
}

export function formatTimeline(events: readonly TimelineEvent[]): string {
  if (events.length === 0) return 'no events\n';
  return table([
    ['AT', 'EVENT', 'STEP', 'ATTEMPT', 'DETAIL'],
    ...events.map((event) => [
      event.at,
      event.type,
      event.step ?? '',
      event.attempt === undefined ? '' : String(event.attempt),
      event.detail ?? '',
    ]),
  ]);
}

function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

/**
 * Progress of a job on stderr: a bar redrawn in place on a terminal, and a
 * line per status change or ten points of progress when stderr is a file or
 * pipe, or the terminal cannot redraw (`TERM=dumb`), so logs stay readable.
 * Outages of the API are said in a line of their own, with what follows.
 */
export class ProgressBar {
  private lastLine: { status: string; decile: number } | undefined;
  private drawn = false;
  private readonly redraw: boolean;

  constructor(
    private readonly stream: Stream,
    private readonly jobId: string,
    env: Readonly<Record<string, string | undefined>> = {},
  ) {
    this.redraw = Boolean(stream.isTTY) && env.TERM !== 'dumb';
  }

  update(update: WaitUpdate): void {
    switch (update.type) {
      case 'progress':
        this.progress(update.status, update.progress);
        return;
      case 'outage':
        this.finish();
        this.stream.write(
          `${this.jobId}: the API cannot be reached (${update.error.message}); retrying in ${Math.ceil(update.retryInMs / 1000)} s. The job goes on; Ctrl-C stops waiting (resume: longhaul jobs wait ${this.jobId})\n`,
        );
        return;
      case 'restored':
        this.stream.write(
          `${this.jobId}: the API answers again (after ${Math.round(update.downMs / 1000)} s)\n`,
        );
        return;
      case 'stream':
        // The socket is how progress arrives, not news to the person waiting.
        return;
    }
  }

  private progress(status: string, progress: number): void {
    if (this.redraw) {
      const width = Math.max(10, Math.min(40, (this.stream.columns ?? 80) - 50));
      const filled = Math.round((progress / 100) * width);
      const bar = `${'#'.repeat(filled)}${'-'.repeat(width - filled)}`;
      this.stream.write(`\r\x1b[2K[${bar}] ${String(progress).padStart(3)}%  ${status}  ${this.jobId}`);
      this.drawn = true;
      return;
    }
    const decile = Math.floor(progress / 10);
    if (this.lastLine && this.lastLine.status === status && this.lastLine.decile === decile) return;
    this.lastLine = { status, decile };
    this.stream.write(`${this.jobId} ${status} ${progress}%\n`);
  }

  /** Ends the bar's line, so what follows starts on a line of its own. */
  finish(): void {
    if (this.drawn) this.stream.write('\n');
    this.drawn = false;
  }
}
