import fc from 'fast-check';
import { computeOutcomeKey } from '../../../../lambdas/domain/compute';
import { vectorKeyOf, vectorsManifestKey } from '../../../../lambdas/domain/embedding';
import { TenantQueueFullError } from '../../../../lambdas/domain/errors';
import { deriveJobId } from '../../../../lambdas/domain/idempotency';
import { cancelJob } from '../../../../lambdas/domain/intake';
import { isTerminal, type Job, newJob } from '../../../../lambdas/domain/job';
import {
  type MediaItem,
  type RetireDeps,
  retireDue,
  type StartVersionDeps,
  startVersion,
} from '../../../../lambdas/domain/media-library';
import { rootOutputPrefix } from '../../../../lambdas/domain/publish';
import { JobSettledError, runStep, type WorkflowDeps } from '../../../../lambdas/domain/workflow';
import {
  MemoryMediaStore,
  MemoryOutputs,
  MemoryStore,
  MemoryTimeline,
  MemoryVectorIndex,
  MemoryWorkflow,
  ScriptedProvider,
} from '../memory-ports';
import { memoryWorkflowDeps } from '../workflow-deps';
import { Actor, Faults, type PortCall, scheduled } from './scheduled';

/**
 * Media versions under every interleaving: new versions requested while one
 * is in progress (admitted, or refused at intake), each version's workflow
 * from its first `transcribe` step (after its probe, or its failure there for a
 * recording that is not audio) through its paid work to `finalize`, the
 * reconciler's timeout to review landing anywhere in it, and the
 * reconciler's retirement passes, with fast-check's scheduler ordering every
 * awaited port call. Checked after every call and once all is quiet.
 */

export const VERSION_INVARIANTS = {
  currentSucceeded: "an item's current version is always a job that succeeded, with its result",
  paidKept:
    "a version's paid outputs are deleted only once a newer version proved good or became current (or the item went)",
  newestCurrent:
    'once all is quiet, the newest succeeded version no newer proven one overtook is current, with its outputs',
} as const;
export type VersionInvariant = keyof typeof VERSION_INVARIANTS;

/** One new-version request: refused at intake, or admitted with a good or bad recording, maybe timed out. */
export interface VersionRequest {
  readonly refused: boolean;
  readonly recordingGood: boolean;
  /** Scheduling points after the request starts when the reconciler's timeout hits its job, if ever. */
  readonly timeoutAfter?: number;
  /** Scheduling points before the request starts. */
  readonly after: number;
}

export interface VersionsWorkload {
  /** A version already published and current before the requests come. */
  readonly published: boolean;
  readonly requests: readonly VersionRequest[];
  /** Scheduling points before each reconciler retirement pass. */
  readonly retirePasses: readonly number[];
}

export const versionsWorkload = (): fc.Arbitrary<VersionsWorkload> =>
  fc.record({
    published: fc.boolean(),
    requests: fc.array(
      fc.record({
        refused: fc.boolean(),
        recordingGood: fc.boolean(),
        timeoutAfter: fc.option(fc.nat({ max: 30 }), { nil: undefined }),
        after: fc.nat({ max: 20 }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
    retirePasses: fc.array(fc.nat({ max: 40 }), { maxLength: 3 }),
  });

const TENANT = 'acme';
const CLOCK = new Date('2026-06-01T10:00:00.000Z');
const GRACE_SECONDS = 600;

interface Breach {
  readonly invariant: VersionInvariant;
  readonly detail: string;
}

export class VersionsWorld {
  readonly media = new MemoryMediaStore();
  readonly jobs = new MemoryStore();
  readonly outputs = new MemoryOutputs();
  readonly vectors = new MemoryVectorIndex('cosine');
  readonly timeline = new MemoryTimeline();
  readonly workflow = new MemoryWorkflow();
  readonly faults = new Faults();
  readonly violations: Breach[] = [];
  /** Versions whose paid work (stream, transcripts, vectors) was laid down. */
  readonly paid = new Set<string>();
  /** The version number of each version whose recording proved good (its probe passed), as the world knows it. */
  readonly probedGood = new Map<string, number>();
  readonly trail: string[] = [];
  readonly mediaId = 'med_aaaaaaaaaaaaaaaaaaaaaaaaaa';
  private actors = 0;

  constructor(readonly scheduler: fc.Scheduler) {}

  item(): MediaItem {
    return this.media.items.get(`${TENANT}/${this.mediaId}`) as MediaItem;
  }

  /** The ports as one actor reaches them: every call a point where anything else may run first. */
  ports(label: string) {
    const actor = new Actor(`${label}#${++this.actors}`);
    const context = {
      scheduler: this.scheduler,
      actor,
      faults: this.faults,
      observe: (call: PortCall) => this.observe(call),
      now: () => CLOCK.getTime(),
    };
    return {
      media: scheduled(this.media, 'media', context),
      jobs: scheduled(this.jobs, 'store', context),
      outputs: scheduled(this.outputs, 'outputs', context),
      vectors: scheduled(this.vectors, 'vectors', context),
    };
  }

  workflowDeps(label: string): WorkflowDeps {
    const ports = this.ports(label);
    return memoryWorkflowDeps(
      { store: ports.jobs, provider: new ScriptedProvider(false), clock: CLOCK },
      {
        media: ports.media,
        outputs: ports.outputs,
        vectors: ports.vectors,
        timeline: this.timeline,
        workflow: this.workflow,
        mediaGraceSeconds: GRACE_SECONDS,
      },
    ) as unknown as WorkflowDeps;
  }

  async setUp(published: boolean): Promise<void> {
    const at = CLOCK.toISOString();
    const item: MediaItem = {
      id: this.mediaId,
      tenantId: TENANT,
      idempotencyKey: 'item',
      fingerprint: 'f',
      title: 'The prodigal son',
      labels: [],
      createdAt: at,
      updatedAt: at,
      metadataRevision: 1,
      rev: 0,
    };
    if (!published) {
      await this.media.create(item);
      return;
    }
    const v0 = versionJob('v0', 1, 'succeeded');
    await this.jobs.create(v0);
    await layDown(this.outputs, this.vectors, v0);
    this.paid.add(v0.id);
    this.probedGood.set(v0.id, 1);
    const ref = { number: 1, jobId: v0.id };
    await this.media.create({
      ...item,
      claimed: ref,
      latest: ref,
      proven: ref,
      current: { ...ref, publishedAt: at },
    });
  }

  /** A request for a new version, then, once admitted, its workflow. */
  async request(index: number, request: VersionRequest): Promise<void> {
    const label = `request ${index}`;
    const ports = this.ports(label);
    const deps: StartVersionDeps = {
      media: ports.media,
      jobs: ports.jobs,
      now: () => CLOCK,
      submit: async ({ idempotencyKey, input, media }) => {
        if (request.refused) throw new TenantQueueFullError(TENANT);
        const job = { ...newJob(jobFields(idempotencyKey, input, media), CLOCK), status: 'running' as const };
        const outcome = await ports.jobs.create(job);
        return outcome.created ? { job, replayed: false } : { job: outcome.existing, replayed: true };
      },
    };
    let job: Job;
    try {
      ({ job } = await startVersion(deps, {
        tenantId: TENANT,
        mediaId: this.mediaId,
        idempotencyKey: `v${index + 1}`,
        request: { audioRef: 'upl_aaaaaaaaaaaaaaaaaaaaaa' },
        jobIdOf: (key) => deriveJobId(TENANT, key),
      }));
    } catch (error) {
      if (error instanceof TenantQueueFullError) return;
      throw error;
    }
    if (request.timeoutAfter !== undefined) void this.timeOut(job.id, request.timeoutAfter);
    await this.publish(job.id, request.recordingGood);
  }

  /** The version's workflow from its probe: its first `transcribe`, the paid work, `finalize`; a settled job waits for nothing. */
  private async publish(jobId: string, recordingGood: boolean): Promise<void> {
    const deps = this.workflowDeps(`publish ${jobId.slice(-4)}`);
    const settle = async () => {
      // Canceled (superseded) while it ran: its workflow settles it through `await-children`.
      await runStep(deps, { step: 'await-children', jobId, taskToken: `token-${jobId}` });
    };
    if (!recordingGood) {
      // Its probe found no audio: the failure path fails it, and its outputs go.
      await runStep(deps, {
        step: 'fail',
        jobId,
        error: { Error: 'InvalidJobInput', Cause: '[input_invalid] The input is not audio.' },
      });
      return;
    }
    try {
      const number = (await deps.store.get(jobId))?.media?.version ?? 0;
      this.probedGood.set(jobId, number);
      // Its first chunk's transcribe, where a version takes the lead before its chunk job is made.
      await runStep(deps, {
        step: 'transcribe',
        jobId,
        taskToken: `chunk-token-${jobId}`,
        chunk: {
          index: 0,
          key: `${rootOutputPrefix({ id: jobId, tenantId: TENANT })}chunks/0.flac`,
          offsetSeconds: 0,
          durationSeconds: 60,
          idempotencyKey: `${jobId}/chunk-0`,
        },
      });
      const job = await deps.store.get(jobId);
      if (job?.status !== 'running' || job.cancelRequestedAt) throw new JobSettledError('settled');
      this.transcribed(jobId);
      await layDown(deps.outputs, deps.vectors, job);
      this.paid.add(jobId);
      await runStep(deps, { step: 'finalize', jobId });
    } catch (error) {
      if (!(error instanceof JobSettledError)) throw error;
      await settle();
    }
  }

  /** The provider transcribed the version's chunk: its job succeeded (at once, as nothing here waits on it). */
  private transcribed(parentId: string): void {
    for (const chunk of this.jobs.jobs.values()) {
      if (chunk.parent?.jobId === parentId && !isTerminal(chunk.status)) {
        this.jobs.jobs.set(chunk.id, { ...chunk, status: 'succeeded', result: {} });
      }
    }
  }

  /** The reconciler's timeout path: a running job past its timeout goes to review. */
  private async timeOut(jobId: string, after: number): Promise<void> {
    await later(this.scheduler, after);
    const { jobs } = this.ports(`timeout ${jobId.slice(-4)}`);
    const job = await jobs.get(jobId);
    if (!job) return;
    await jobs.transition(
      job,
      ['running'],
      { status: 'needs_review', error: { code: 'job_timeout', message: 'Still running; stopped.' } },
      CLOCK,
    );
  }

  /** One reconciler pass over the retirements due. */
  async retirePass(): Promise<void> {
    const ports = this.ports('retire');
    const workflowDeps = this.workflowDeps('retire-cancel');
    const deps: RetireDeps = {
      media: ports.media,
      jobs: ports.jobs,
      now: () => CLOCK,
      timeline: this.timeline,
      workflow: { status: async () => 'SUCCEEDED' },
      outputs: ports.outputs,
      vectors: ports.vectors,
      deleteInput: async () => {},
      cancel: async (job) => {
        await cancelJob(workflowDeps, job.tenantId, job.id);
      },
      quietSeconds: 0,
    };
    await retireDue(deps, 10);
  }

  private observe(call: PortCall): void {
    this.trail.push(`${call.actor.label} ▶ ${call.port}.${call.method}`);
    const item = this.item();
    if (item?.current) {
      const job = this.jobs.jobs.get(item.current.jobId);
      if (job?.status !== 'succeeded') {
        this.violations.push({
          invariant: 'currentSucceeded',
          detail: `version ${item.current.number} is current and its job is ${job?.status ?? 'missing'}`,
        });
      }
    }
    const deleted = deletedVersion(call);
    if (deleted && this.paid.has(deleted)) {
      const job = this.jobs.jobs.get(deleted);
      const number = job?.media?.version ?? 0;
      const newer = Math.max(item?.current?.number ?? 0, this.newestProbedGood());
      if (item?.current?.jobId === deleted || (number >= newer && !item?.deletedAt)) {
        this.violations.push({
          invariant: 'paidKept',
          detail: `the paid outputs of version ${number} (${job?.status}) were deleted by ${call.actor.label} with ${describe(item)}`,
        });
      }
    }
  }

  /** The newest version whose recording proved good: what may overtake an older one. */
  private newestProbedGood(): number {
    return Math.max(0, ...this.probedGood.values());
  }

  /** What is wrong once all is quiet. */
  converged(): Breach[] {
    const item = this.item();
    const versions = [...this.jobs.jobs.values()].filter((job) => job.media);
    const succeeded = versions
      .filter((job) => job.status === 'succeeded')
      .sort((a, b) => (b.media?.version ?? 0) - (a.media?.version ?? 0));
    const newest = succeeded[0];
    const breaches: Breach[] = [];
    if (newest && (newest.media?.version ?? 0) >= this.newestProbedGood()) {
      const outputsKept = this.outputs.objects.has(vectorsManifestKey(newest));
      if (item.current?.jobId !== newest.id || !outputsKept) {
        breaches.push({
          invariant: 'newestCurrent',
          detail: `version ${newest.media?.version} succeeded (outputs ${outputsKept ? 'kept' : 'gone'}) and ${describe(item)}`,
        });
      }
    }
    return breaches;
  }
}

const describe = (item: MediaItem | undefined) =>
  item
    ? `current ${item.current?.number ?? 'none'}, proven ${item.proven?.number ?? 'none'}, latest ${item.latest?.number ?? 'none'}`
    : 'no item';

/** The version job whose outputs or vectors a call deletes, if it is one. */
function deletedVersion(call: PortCall): string | undefined {
  if (call.port === 'outputs' && call.method === 'deleteOutputs') {
    return /\/(job_[a-z2-7]{26})\//.exec(String(call.args[0]))?.[1];
  }
  if (call.port === 'vectors' && call.method === 'delete') {
    const keys = call.args[0] as readonly string[];
    return /(job_[a-z2-7]{26})/.exec(keys[0] ?? '')?.[1];
  }
  return undefined;
}

const jobFields = (idempotencyKey: string, input: Record<string, unknown>, media: Job['media']) => ({
  id: deriveJobId(TENANT, idempotencyKey),
  tenantId: TENANT,
  type: 'audio.publish' as const,
  input,
  idempotencyKey,
  fingerprint: 'f',
  ...(media ? { media } : {}),
});

function versionJob(key: string, number: number, status: Job['status']): Job {
  const idempotencyKey = `media/med_aaaaaaaaaaaaaaaaaaaaaaaaaa/${key}`;
  return {
    ...newJob(
      jobFields(
        idempotencyKey,
        { audioRef: 'upl_aaaaaaaaaaaaaaaaaaaaaa' },
        {
          id: 'med_aaaaaaaaaaaaaaaaaaaaaaaaaa',
          version: number,
        },
      ),
      CLOCK,
    ),
    status,
    ...(status === 'succeeded' ? { result: { searchable: true } } : {}),
  };
}

/** What a version's paid work leaves, as its compute steps and embedding record it. */
async function layDown(
  outputs: Pick<MemoryOutputs, 'putOutput'>,
  vectors: Pick<MemoryVectorIndex, 'put'>,
  job: Job,
): Promise<void> {
  const prefix = rootOutputPrefix(job);
  const recorded = {
    probe: { durationSeconds: 60, codec: 'mp3', channels: 1, compute: 'lambda' },
    transcode: { playlistKey: `${prefix}hls/master.m3u8`, renditions: [] },
    index: { transcriptKey: `${prefix}transcript.json`, passages: [] },
  } as const;
  for (const [step, result] of Object.entries(recorded)) {
    await outputs.putOutput(
      computeOutcomeKey(job, step as keyof typeof recorded),
      JSON.stringify({ ok: true, result }),
      'application/json',
    );
  }
  await vectors.put([
    {
      key: vectorKeyOf(job, 0),
      data: [1, 0, 0],
      metadata: {
        tenant: TENANT,
        item: job.media?.id ?? job.id,
        date: 20_000,
        labels: [],
        passage: 0,
        start: 0,
        end: 30,
        text: 'words',
      },
    },
  ]);
  await outputs.putOutput(vectorsManifestKey(job), JSON.stringify({ count: 1 }), 'application/json');
}

async function later(scheduler: fc.Scheduler, points: number): Promise<void> {
  for (let i = 0; i < points; i++) await scheduler.schedule(Promise.resolve(), 'time passes');
}

/** Runs one workload to quiet, then a last retirement pass with nothing else running. */
export async function exploreVersions(
  scheduler: fc.Scheduler,
  workload: VersionsWorkload,
): Promise<VersionsWorld> {
  const world = new VersionsWorld(scheduler);
  await world.setUp(workload.published);
  const running: Promise<unknown>[] = [];
  workload.requests.forEach((request, index) => {
    running.push(later(scheduler, request.after).then(() => world.request(index, request)));
  });
  for (const after of workload.retirePasses)
    running.push(later(scheduler, after).then(() => world.retirePass()));
  const settled = Promise.allSettled(running);
  await scheduler.waitIdle();
  for (const outcome of await settled) {
    if (outcome.status === 'rejected') throw outcome.reason;
  }
  // A last pass with nothing else running: whatever is due is carried out.
  const lastPass = world.retirePass();
  await scheduler.waitIdle();
  await lastPass;
  return world;
}

/** Everything wrong with a finished run, as one message; undefined when it kept every promise. */
export function versionsVerdict(world: VersionsWorld): string | undefined {
  const breaches = [...world.violations, ...world.converged()];
  const first = breaches[0];
  if (!first) return undefined;
  return [
    `Broken: ${VERSION_INVARIANTS[first.invariant]}`,
    `  ${first.detail}`,
    ...breaches.slice(1).map((b) => `  also (${b.invariant}) ${b.detail}`),
    '  port calls leading there:',
    ...world.trail.slice(-30).map((line) => `    ${line}`),
  ].join('\n');
}
