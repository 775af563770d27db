import { AmbiguousSubmissionError, ProviderUnavailableError } from '../../../../lambdas/domain/errors';
import type {
  Provider,
  ProviderJobState,
  ProviderJobStatus,
  ProviderSubmission,
} from '../../../../lambdas/domain/provider';

/** One job the provider runs (and bills): what it was submitted under and where it is. */
export interface ProviderRun {
  readonly id: string;
  /** The idempotency key it was submitted under. */
  readonly key: string;
  /** Longhaul's job, from the webhook URL the submission named. */
  readonly jobId: string;
  /** Which of the job's submissions it was sent for (its tag), from the same URL: its events name it. */
  readonly submission: string;
  /** The slot holder of that submission (`slotHolderOf`): what the run uses capacity for. */
  readonly holder: string;
  readonly acceptedAt: number;
  state: ProviderJobState;
}

/** How the provider answers the next submission. */
export type SubmitFault = 'unavailable' | 'ambiguous';

const PNG = Buffer.from([137, 80, 78, 71]).toString('base64');

/**
 * A provider that records every submission it accepted. One that deduplicates
 * answers a repeated key with the first job; one that cannot starts (and bills)
 * a new job per request. An `unavailable` answer is a definite refusal; an
 * `ambiguous` one is accepted while the caller only sees an error.
 */
export class SimulatedProvider implements Provider {
  readonly name = 'longhaul-http' as const;
  readonly runs = new Map<string, ProviderRun>();
  /** Every request that reached the provider, by key and sending submission, accepted or not. */
  readonly sent: { key: string; holder: string; accepted: boolean }[] = [];
  private readonly faults: SubmitFault[] = [];
  private readonly cancelFaults: number[] = [];
  stopped = false;

  constructor(
    readonly deduplicates: boolean,
    private readonly now: () => number,
    /** The slot holder of a job's submission, from the tag its webhook URL names. */
    private readonly holderOf: (jobId: string, submission: string) => string,
  ) {}

  failNextSubmit(fault: SubmitFault): void {
    if (!this.stopped) this.faults.push(fault);
  }

  failNextCancel(): void {
    if (!this.stopped) this.cancelFaults.push(1);
  }

  stopFaults(): void {
    this.stopped = true;
    this.faults.length = 0;
    this.cancelFaults.length = 0;
  }

  async submit(submission: ProviderSubmission) {
    const fault = this.faults.shift();
    const key = submission.idempotencyKey;
    const url = new URL(submission.webhookUrl).searchParams;
    const jobId = url.get('jobId') ?? '';
    const submitted = url.get('submission') ?? '';
    const holder = this.holderOf(jobId, submitted);
    if (fault === 'unavailable') {
      this.sent.push({ key, holder, accepted: false });
      throw new ProviderUnavailableError('503 from the provider');
    }
    this.sent.push({ key, holder, accepted: true });
    const existing = this.deduplicates ? [...this.runs.values()].find((run) => run.key === key) : undefined;
    const run = existing ?? this.startRun(key, jobId, submitted, holder);
    if (fault === 'ambiguous') throw new AmbiguousSubmissionError('The connection reset after the request.');
    return { providerJobId: run.id };
  }

  async status(providerJobId: string): Promise<ProviderJobStatus> {
    const run = this.runs.get(providerJobId);
    if (!run) throw new Error(`unknown provider job ${providerJobId}`);
    return {
      id: run.id,
      status: run.state,
      progress: run.state === 'succeeded' ? 100 : 0,
      ...(run.state === 'succeeded' ? { output: { image: { contentType: 'image/png', base64: PNG } } } : {}),
      ...(run.state === 'failed' ? { error: { code: 'provider_failed', message: 'It broke.' } } : {}),
    };
  }

  async cancel(providerJobId: string) {
    if (this.cancelFaults.shift()) throw new ProviderUnavailableError('cancel timed out');
    const run = this.runs.get(providerJobId);
    if (run?.state === 'running') run.state = 'canceled';
  }

  /** The provider finishes a job on its own; false if it was not running. */
  finish(providerJobId: string, state: 'succeeded' | 'failed'): boolean {
    const run = this.runs.get(providerJobId);
    if (run?.state !== 'running') return false;
    run.state = state;
    return true;
  }

  /** Jobs running since before `acceptedBefore` fail: the provider's own limit, no shorter than Longhaul's job timeout. */
  timeOut(acceptedBefore: number): ProviderRun[] {
    const stopped = [...this.runs.values()].filter(
      (r) => r.state === 'running' && r.acceptedAt < acceptedBefore,
    );
    for (const run of stopped) run.state = 'failed';
    return stopped;
  }

  /** Provider jobs of one Longhaul job that may still be running (and billing). */
  running(jobId: string): ProviderRun[] {
    return [...this.runs.values()].filter((run) => run.jobId === jobId && run.state === 'running');
  }

  /** Provider jobs still running for one submission (a slot holder). */
  runningFor(holder: string): ProviderRun[] {
    return [...this.runs.values()].filter((run) => run.holder === holder && run.state === 'running');
  }

  private startRun(key: string, jobId: string, submission: string, holder: string): ProviderRun {
    const run: ProviderRun = {
      id: `gen_${this.runs.size + 1}`,
      key,
      jobId,
      submission,
      holder,
      acceptedAt: this.now(),
      state: 'running',
    };
    this.runs.set(run.id, run);
    return run;
  }
}
