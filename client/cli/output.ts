import type { JobWaiting } from '../api-types';
import type {
  AdminJob,
  BatchItemResult,
  Job,
  MediaItem,
  MediaVersion,
  Page,
  SearchResult,
  TimelineEvent,
} from '../types';
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

/**
 * One line per batch item, in item order, each headed by its line in the
 * file (1-based, as an editor counts): its status and key, then its job or
 * why it was refused. The API's pointers (`/items/<index>`, 0-based within
 * one request) are said as that line, so an item has one number.
 */
export function formatBatchResults(results: readonly BatchItemResult[], lines: readonly number[]): string {
  const lineOf = (index: string) => `line ${lines[Number(index)] ?? Number(index) + 1}`;
  return results
    .map((result, index) => {
      const head = `${lineOf(String(index))}  ${result.status}  ${result.idempotencyKey ?? '(no key)'}`;
      if (result.job) {
        return `${head}  ${result.job.id}  ${result.job.status}${result.replayed ? '  (already submitted)' : ''}\n`;
      }
      const problem = result.problem;
      const fields = (problem?.errors ?? []).map(
        (error) =>
          `\n    ${(error.pointer ?? error.parameter ?? '').replace(/^\/items\/\d+(?=\/|$)/, '')}: ${error.detail}`,
      );
      const detail = (problem?.detail ?? '').replace(
        /\/items\/(\d+)/g,
        (_, item: string) => `on ${lineOf(item)}`,
      );
      return `${head}  ${problem?.code ?? 'refused'}: ${detail}${fields.join('')}\n`;
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

/** A version in a few words: its number, its status, its job, and how long it plays once known. */
function versionLine(version: MediaVersion): string {
  const duration = version.durationSeconds === undefined ? '' : `  ${clockTime(version.durationSeconds)}`;
  return `v${version.number} ${version.status}  ${version.jobId}${duration}`;
}

/** A media item: its title line, then its metadata, its current version and the one being published. */
export function formatMediaItem(item: MediaItem): string {
  const fields: [string, string][] = [];
  const field = (name: string, value: string | undefined) => {
    if (value !== undefined) fields.push([name, value]);
  };
  field('speaker', item.speaker);
  field('date', item.date);
  if (item.labels.length > 0) field('labels', item.labels.join(', '));
  field('current', item.current ? versionLine(item.current) : 'none published yet');
  field('playlist', item.current?.playlistUrl);
  field('transcript', item.current?.transcriptUrl);
  if (item.inProgress) field('publishing', versionLine(item.inProgress));
  field('created', item.createdAt);
  field('updated', item.updatedAt);
  const width = Math.max(...fields.map(([name]) => name.length)) + 2;
  const lines = [
    `${item.id}  ${item.title}`,
    ...fields.map(([name, value]) => `  ${name.padEnd(width)}${value}`),
  ];
  return `${lines.join('\n')}\n`;
}

export function formatMediaTable(page: Pick<Page<MediaItem>, 'items'>): string {
  if (page.items.length === 0) return 'no media items\n';
  return table([
    ['ID', 'DATE', 'CURRENT', 'PUBLISHING', 'TITLE'],
    ...page.items.map((item) => [
      item.id,
      item.date ?? '',
      item.current ? `v${item.current.number}` : '',
      item.inProgress ? `v${item.inProgress.number}` : '',
      item.speaker ? `${item.title} (${item.speaker})` : item.title,
    ]),
  ]);
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

/** Seconds as a listener reads a time in a recording: m:ss, or h:mm:ss from the first hour on. */
export function clockTime(seconds: number): string {
  const whole = Math.floor(seconds);
  const [hours, minutes, secs] = [Math.floor(whole / 3600), Math.floor(whole / 60) % 60, whole % 60];
  const ss = String(secs).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${ss}` : `${minutes}:${ss}`;
}

/** `line` cut to at most `width` characters, with an ellipsis; whole when `width` is unknown. */
function cut(line: string, width: number | undefined): string {
  const characters = Array.from(line);
  if (width === undefined || characters.length <= width) return line;
  return `${characters
    .slice(0, Math.max(0, width - 1))
    .join('')
    .trimEnd()}…`;
}

/**
 * Search hits, closest first: a row per hit (rank, score, where the passage
 * is in the recording, the recording and its date), the passage's text under
 * it cut to the terminal's width (`columns`; whole when output is no
 * terminal), and under that the URL that plays it from its first word, never
 * cut, since a cut URL plays nothing.
 */
export function formatSearchHits(result: SearchResult, columns?: number): string {
  if (result.items.length === 0) return 'no passages found\n';
  const header = ['#', 'SCORE', 'PASSAGE', 'RECORDING', 'DATE'];
  const hits = result.items.map((hit, index) => ({
    cells: [
      String(index + 1),
      hit.score.toFixed(3),
      `${clockTime(hit.passage.start)}–${clockTime(hit.passage.end)}`,
      hit.item.title ?? hit.item.id,
      hit.item.date,
    ],
    // A transcript's line breaks and runs of spaces say nothing here: one line.
    text: hit.passage.text.replace(/\s+/g, ' ').trim(),
    url: hit.playback.url,
  }));
  const widths = header.map((name, column) =>
    Math.max(name.length, ...hits.map(({ cells }) => cells[column]?.length ?? 0)),
  );
  const row = (cells: readonly string[]) =>
    cut(
      cells
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd(),
      columns,
    );
  // The text and the URL start under the score, so the ranks stand out.
  const indent = ' '.repeat((widths[0] ?? 0) + 2);
  const textWidth = columns === undefined ? undefined : columns - indent.length;
  const lines = [
    row(header),
    ...hits.flatMap(({ cells, text, url }) => [
      row(cells),
      `${indent}${cut(text, textWidth)}`,
      `${indent}${url}`,
    ]),
  ];
  return lines.map((line) => `${line}\n`).join('');
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

/** Why a queued job waits, in words. */
export function waitingText(waiting: JobWaiting): string {
  const estimate = waiting.estimatedStartAt ? `; expected to start about ${waiting.estimatedStartAt}` : '';
  const place = waiting.position !== undefined ? ` (number ${waiting.position} in your line)` : '';
  switch (waiting.reason) {
    case 'provider_paused':
      return `its provider is paused${waiting.until ? ` until ${waiting.until}` : ''}${place}${estimate}`;
    case 'provider_full':
      return `every slot of its provider is taken; it waits in line${place}${estimate}`;
    case 'tenant_cap':
      return `your jobs at its provider are at your in-flight cap; it waits in line${place}${estimate}`;
    case 'rate_limited':
      return `its provider's request rate is used up for now${waiting.until ? ` until ${waiting.until}` : ''}${place}${estimate}`;
  }
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
        this.progress(update.status, update.progress, update.waiting);
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

  private progress(status: string, progress: number, waiting: JobWaiting | undefined): void {
    if (status === 'queued' && waiting) {
      // Why it waits says more than a bar at 0%: a line of its own, each time the reason changes.
      this.finish();
      this.lastLine = undefined;
      this.stream.write(`${this.jobId} queued: ${waitingText(waiting)}\n`);
      return;
    }
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
