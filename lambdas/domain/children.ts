import type { TimelineEvent } from './ports';

/**
 * How a job that makes jobs of its own (audio.publish: a chunk job per chunk,
 * an embedding job per run of passages) records each one it made, in its own
 * timeline: one event naming the child, which a cancel of the parent reads to
 * cancel the children too.
 */
export const CHILD_MADE = { transcribe: 'chunk.submitted', embed: 'embedding.submitted' } as const;

/** The event's detail: what the child is, which try, and its job: `chunk 3 (try 2) as job_…`. */
export const childMadeDetail = (label: string, attempt: number, childId: string): string =>
  `${label}${attempt > 0 ? ` (try ${attempt + 1})` : ''} as ${childId}`;

const NAMED_CHILD = / as (job_[a-z2-7]{26})$/;
const MADE: ReadonlySet<string> = new Set(Object.values(CHILD_MADE));

/** The jobs a parent's timeline says it made, each once, in the order it made them. */
export function childJobIdsOf(events: readonly TimelineEvent[]): string[] {
  const ids = events.flatMap((event) =>
    MADE.has(event.type) ? (NAMED_CHILD.exec(event.detail ?? '')?.slice(1, 2) ?? []) : [],
  );
  return [...new Set(ids)];
}
