import { tmpdir } from 'node:os';
import fc from 'fast-check';
import { CHUNK_TRANSCRIPT_FILE } from '../../../../config/job-types/audio-publish';
import { replayJobs } from '../../../../lambdas/domain/bulk';
import { CHILD_MADE, childMadeDetail } from '../../../../lambdas/domain/children';
import { awaitChunk, CHUNK_ATTEMPTS, chunkAttemptKey } from '../../../../lambdas/domain/chunk-jobs';
import { type ComputeDeps, computeOutcomeKey, runComputeStep } from '../../../../lambdas/domain/compute';
import { deriveJobId } from '../../../../lambdas/domain/idempotency';
import { executionNameOf, goesOn, type Job, newJob, providerKeyOf } from '../../../../lambdas/domain/job';
import { jobOutputPrefix, type StoredChunk } from '../../../../lambdas/domain/publish';
import { type ReconcileDeps, reconcile } from '../../../../lambdas/domain/reconcile';
import { resumeJob } from '../../../../lambdas/domain/resume';
import { runStep } from '../../../../lambdas/domain/workflow';
import {
  MemoryBacklogs,
  type MemoryOutputs,
  MemoryReconcilerProgress,
  MemoryStore,
  ScriptedProvider,
} from '../memory-ports';
import { memoryWorkflowDeps } from '../workflow-deps';
import { Actor, Faults, scheduled } from './scheduled';

/**
 * A failed audio.publish and the jobs it made for its chunks, under every
 * interleaving of what may happen to them: the reconciler's orphan sweep,
 * a canceled try's execution reaching its settle state late, the provider
 * finishing a sent try, the client's resume and the publish's transcribe
 * state making a chunk's next try, its index step, and an operator's bulk
 * replay (maybe stopped between naming its replay and making it, maybe run
 * twice with two notes). Everything runs through the domain's own code over
 * the in-memory ports, each port call a point where the scheduler may run
 * anything else first; the provider's finishing of a sent try is the one
 * stand-in (its transcript kept where the try's finalize keeps it, and the
 * try succeeded naming it).
 *
 * Two promises are checked after every port call: no paid result deleted (a
 * transcript a provider was paid for stays while the publish, or a resume of
 * it, can still use it), and one charge per user action (a replayed publish
 * is never resumed, a resumed one never replayed, and a chunk whose
 * submission's outcome is unknown never sent again under a new key).
 */

export const TENANT = 'acme';
const T0 = Date.parse('2026-06-01T10:00:00.000Z');
const CHUNKS = 2;

/** How a chunk's first try stands when the publish failed. */
export type FirstTry = 'paid' | 'sent' | 'unsent' | 'unknown';

export type ChildAction =
  | { readonly kind: 'sweep' }
  | { readonly kind: 'settle'; readonly chunk: number }
  | { readonly kind: 'finish'; readonly chunk: number }
  | { readonly kind: 'resume' }
  | { readonly kind: 'transcribe' }
  | { readonly kind: 'index' }
  | { readonly kind: 'replay'; readonly note: 'a' | 'b'; readonly stops: boolean };

export interface ChildrenWorkload {
  readonly firstTries: readonly FirstTry[];
  readonly actions: readonly ChildAction[];
  /** Per action: it starts as soon as the one before it started (a race), else once that one ended. */
  readonly overlaps: readonly boolean[];
}

const chunk = fc.nat({ max: CHUNKS - 1 });
const action: fc.Arbitrary<ChildAction> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: 'sweep' as const }) },
  { weight: 3, arbitrary: chunk.map((c) => ({ kind: 'settle' as const, chunk: c })) },
  { weight: 4, arbitrary: chunk.map((c) => ({ kind: 'finish' as const, chunk: c })) },
  { weight: 3, arbitrary: fc.constant({ kind: 'resume' as const }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'transcribe' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'index' as const }) },
  {
    weight: 2,
    arbitrary: fc
      .record({ note: fc.constantFrom<'a' | 'b'>('a', 'b'), stops: fc.boolean() })
      .map((r) => ({ kind: 'replay' as const, ...r })),
  },
);

export const childrenWorkload = (maxActions = 8): fc.Arbitrary<ChildrenWorkload> =>
  fc.record({
    firstTries: fc.array(fc.constantFrom<FirstTry>('paid', 'sent', 'unsent', 'unknown'), {
      minLength: CHUNKS,
      maxLength: CHUNKS,
    }),
    actions: fc.array(action, { minLength: 1, maxLength: maxActions }),
    overlaps: fc.array(fc.boolean(), { minLength: maxActions, maxLength: maxActions }),
  });

export interface ChildrenWorld {
  readonly breaches: string[];
  readonly parentId: string;
  readonly store: MemoryStore;
  readonly outputs: MemoryOutputs;
}

type Deps = ReturnType<typeof worldDeps>;

function worldDeps(clock: Date) {
  const store = new MemoryStore();
  const provider = new ScriptedProvider(false);
  return memoryWorkflowDeps({ store, provider, clock }, {});
}

/** Runs the workload's actions at once, the scheduler ordering every port call, and checks after each. */
export async function exploreChildren(
  scheduler: fc.Scheduler,
  workload: ChildrenWorkload,
): Promise<ChildrenWorld> {
  const clock = new Date(T0);
  const base = worldDeps(clock);
  const { store, outputs, timeline, workflow } = base;
  const { parent, chunks } = await setUpPublish(base, workload.firstTries);
  const world: ChildrenWorld = { breaches: [], parentId: parent.id, store, outputs };
  const judge = () => {
    const breach = broken(world, chunks);
    if (breach && !world.breaches.includes(breach)) world.breaches.push(breach);
  };
  const faults = new Faults();
  const deps = (label: string): Deps => {
    const context = {
      scheduler,
      actor: new Actor(label),
      faults,
      observe: judge,
      now: () => clock.getTime(),
    };
    const ports = {
      store: scheduled(store, 'store', context),
      outputs: scheduled(outputs, 'outputs', context),
      timeline: scheduled(timeline, 'timeline', context),
      workflow: scheduled(workflow, 'workflow', context),
    };
    return { ...base, ...ports, intake: { ...base.intake, store: ports.store } };
  };

  const run = (act: ChildAction, at: number): Promise<unknown> => {
    const d = deps(`${at}:${act.kind}${'chunk' in act ? ` ${act.chunk}` : ''}`);
    switch (act.kind) {
      case 'sweep':
        return reconcile(reconcileDeps(d, store));
      case 'settle':
        return settleCanceledTries(d, parent, chunks[act.chunk]);
      case 'finish':
        return finishTry(d, parent, chunks[act.chunk]);
      case 'resume':
        // The redriven execution goes back to the transcribe states, one per chunk.
        return resumeJob(d, TENANT, parent.id).then(() =>
          Promise.allSettled(chunks.map((c) => transcribe(d, parent, c, at))),
        );
      case 'transcribe':
        return Promise.allSettled(chunks.map((c) => transcribe(d, parent, c, at)));
      case 'index':
        return indexWhileRunning(d, parent);
      case 'replay':
        return replay(d, act.note, act.stops);
    }
  };
  // Each action starts once the one before it ended, or, overlapping, once it started; from then on
  // the scheduler interleaves their port calls as it likes.
  let started: Promise<unknown> = Promise.resolve();
  let ended: Promise<unknown> = Promise.resolve();
  const runs = workload.actions.map((act, at) => {
    const after = workload.overlaps[at] ? started : ended;
    started = after.then(() => scheduler.schedule(Promise.resolve(), `start ${at}:${act.kind}`));
    const running = started.then(() => run(act, at));
    ended = running.catch(() => {});
    return running;
  });
  await scheduler.waitFor(Promise.allSettled(runs));
  // A replay request that stopped midway is followed by the operator's next one: the mark converges.
  const marked = store.jobs.get(parent.id)?.replacedBy;
  if (marked !== undefined && !store.jobs.has(marked)) {
    await scheduler.waitFor(replay(deps('retry:replay'), 'c', false).catch(() => {}));
  }
  judge();
  const named = store.jobs.get(parent.id)?.replacedBy;
  if (named !== undefined && !store.jobs.has(named)) {
    world.breaches.push(`replayConverges: ${parent.id} names its replay ${named}, which was never made`);
  }
  return world;
}

/** The failed publish, its chunks as its split stored them, and each chunk's first try as the workload says. */
async function setUpPublish(deps: Deps, firstTries: readonly FirstTry[]) {
  const clock = deps.now();
  const draft = newJob(
    {
      id: deriveJobId(TENANT, 'publish-1'),
      tenantId: TENANT,
      type: 'audio.publish',
      provider: 'deepgram',
      input: { audioUrl: 'https://media.example/sermon.mp3' },
      idempotencyKey: 'publish-1',
      fingerprint: 'f-publish-1',
    },
    clock,
  );
  const parent: Job = {
    ...draft,
    status: 'failed',
    error: { code: 'internal', message: 'The index step crashed.' },
    startedAt: clock.toISOString(),
    finishedAt: clock.toISOString(),
    executionName: executionNameOf(draft),
  };
  deps.store.jobs.set(parent.id, parent);
  await deps.workflow.start(executionNameOf(parent), { jobId: parent.id });
  deps.workflow.statuses.set(executionNameOf(parent), 'FAILED');
  const chunks: StoredChunk[] = Array.from({ length: firstTries.length }, (_, index) => ({
    index,
    key: `${jobOutputPrefix(parent)}chunks/chunk-${index}.flac`,
    offsetSeconds: index * 60,
    durationSeconds: 60,
    idempotencyKey: `${providerKeyOf(parent)}:chunk-${index}`,
  }));
  await deps.outputs.putOutput(
    computeOutcomeKey(parent, 'split'),
    JSON.stringify({ ok: true, result: chunks }),
    'application/json',
  );
  for (const chunk of chunks) {
    const stands = firstTries[chunk.index] ?? 'unsent';
    const made = newJob(
      {
        id: deriveJobId(TENANT, chunkAttemptKey(chunk, 0)),
        tenantId: TENANT,
        type: 'audio.publish.chunk',
        provider: 'deepgram',
        input: { chunkKey: chunk.key },
        idempotencyKey: chunkAttemptKey(chunk, 0),
        fingerprint: `f-chunk-${chunk.index}`,
        parent: { jobId: parent.id, index: chunk.index },
      },
      clock,
    );
    const at = clock.toISOString();
    const transcriptKey = `${jobOutputPrefix(made)}${CHUNK_TRANSCRIPT_FILE}`;
    const job: Job =
      stands === 'unsent'
        ? made
        : stands === 'unknown'
          ? {
              ...made,
              status: 'running',
              startedAt: at,
              executionName: executionNameOf(made),
              submitIntent: { attemptId: 'a-0', at, providerKey: chunkAttemptKey(chunk, 0) },
            }
          : {
              ...made,
              status: stands === 'paid' ? 'succeeded' : 'running',
              startedAt: at,
              executionName: executionNameOf(made),
              providerJobId: `dg-${chunk.index}-0`,
              ...(stands === 'paid' ? { result: { transcriptKey }, finishedAt: at } : {}),
            };
    deps.store.jobs.set(job.id, job);
    if (stands !== 'unsent') await deps.workflow.start(executionNameOf(job), { jobId: job.id });
    if (stands === 'paid')
      await deps.outputs.putOutput(transcriptKey, transcriptOf(chunk), 'application/json');
    await deps.timeline.record(parent.id, {
      at,
      type: CHILD_MADE.transcribe,
      detail: childMadeDetail(`chunk ${chunk.index}`, 0, job.id),
    });
  }
  return { parent, chunks };
}

const transcriptOf = (chunk: StoredChunk) =>
  JSON.stringify({
    results: {
      channels: [
        {
          alternatives: [{ transcript: '', words: [{ word: `word${chunk.index}`, start: 1, end: 1.5 }] }],
        },
      ],
    },
  });

const triesOf = (chunk: StoredChunk, resumes: number): string[] =>
  Array.from({ length: CHUNK_ATTEMPTS * (resumes + 1) }, (_, attempt) =>
    deriveJobId(TENANT, chunkAttemptKey(chunk, attempt)),
  );

/** A canceled try's execution reaches its settle state (late: the publish may have gone on since). */
async function settleCanceledTries(deps: Deps, parent: Job, chunk: StoredChunk | undefined) {
  if (!chunk) return;
  const now = await deps.store.get(parent.id);
  for (const id of triesOf(chunk, now?.resumes ?? 0)) {
    const job = await deps.store.get(id);
    if (job?.status !== 'canceled') continue;
    await runStep(deps, { step: 'settle', jobId: id, executionName: executionNameOf(job) });
  }
}

/**
 * The provider runs the chunk's newest try and finishes it: a stand-in for
 * dispatch, submit and finalize, keeping the transcript where finalize keeps
 * it and succeeding the try with it, as finalize does (only a running try).
 */
async function finishTry(deps: Deps, parent: Job, chunk: StoredChunk | undefined) {
  if (!chunk) return;
  const now = await deps.store.get(parent.id);
  let newest: Job | undefined;
  for (const id of triesOf(chunk, now?.resumes ?? 0)) {
    const job = await deps.store.get(id);
    if (!job) break;
    newest = job;
  }
  if (!newest || newest.submitIntent) return;
  let running = newest;
  if (running.status === 'queued') {
    const started = await deps.store.transition(
      running,
      ['queued'],
      { status: 'running', startedAt: deps.now().toISOString() },
      deps.now(),
    );
    if (!started) return;
    await deps.store.settleSubmitIntent(running.id, `dg-${running.id}`);
    const sent = await deps.store.get(running.id);
    if (!sent) return;
    running = sent;
  }
  if (running.status !== 'running' || !running.providerJobId) return;
  const transcriptKey = `${jobOutputPrefix(running)}${CHUNK_TRANSCRIPT_FILE}`;
  await deps.outputs.putOutput(transcriptKey, transcriptOf(chunk), 'application/json');
  await deps.store.transition(
    running,
    ['running'],
    { status: 'succeeded', result: { transcriptKey }, finishedAt: deps.now().toISOString() },
    deps.now(),
  );
}

/** The publish's transcribe state for one chunk (the Map runs one per chunk), while the publish goes on. */
async function transcribe(deps: Deps, parent: Job, chunk: StoredChunk, at: number) {
  const now = await deps.store.get(parent.id);
  if (!now || !goesOn(now)) return;
  await awaitChunk(deps, now, chunk, `token-${chunk.index}-${at}`);
}

/** The publish's index step, while it goes on: it fails while a chunk has no transcript yet. */
async function indexWhileRunning(deps: Deps, parent: Job) {
  const now = await deps.store.get(parent.id);
  if (now?.status !== 'running') return;
  const compute: ComputeDeps = {
    store: deps.store,
    outputs: deps.outputs,
    timeline: deps.timeline,
    now: deps.now,
    inputs: deps.inputs,
    media: {
      probe: async () => {
        throw new Error('not used');
      },
      transcodeToHls: async () => {
        throw new Error('not used');
      },
      splitIntoChunks: async () => {
        throw new Error('not used');
      },
    },
    download: async () => {},
    scratchRoot: tmpdir(),
    plan: {
      renditionsKbps: [64],
      segmentSeconds: 6,
      chunkSeconds: 60,
      maxDurationSeconds: 3600,
      lambdaMaxAudioSeconds: 100,
    },
    inputUrlTtlSeconds: 900,
  };
  await runComputeStep(compute, { step: 'index', jobId: parent.id });
}

/** An operator's bulk replay of the tenant's failed jobs; `stops`: its request dies before the replay is made. */
function replay(deps: Deps, note: string, stops: boolean) {
  const store = stops
    ? new Proxy(deps.store, {
        get(target, property, receiver) {
          if (property === 'create')
            return async (job: Job) => {
              if (job.replayOf !== undefined) throw new Error('The replay request timed out.');
              return target.create(job);
            };
          return Reflect.get(target, property, receiver);
        },
      })
    : deps.store;
  return replayJobs(
    { ...deps.intake, store, timeline: deps.timeline },
    { filter: { tenant: TENANT, status: ['failed'] }, note: `note ${note}` },
    10,
  );
}

function reconcileDeps(deps: Deps, store: MemoryStore): ReconcileDeps {
  return {
    ...deps,
    queuedGraceMs: 30_000,
    jobTimeoutMs: 600_000,
    slotWaitMaxSeconds: 5,
    pageSize: 10,
    budgetMs: 60_000,
    progress: new MemoryReconcilerProgress(),
    backlogs: new MemoryBacklogs(store),
    promotionsPerPass: 10,
  };
}

/** The first promise the world breaks now, or undefined. */
function broken(world: ChildrenWorld, chunks: readonly StoredChunk[]): string | undefined {
  const parent = world.store.jobs.get(world.parentId);
  if (!parent) return undefined;
  const replays = [...world.store.jobs.values()].filter((job) => job.replayOf === parent.id);
  if ((parent.resumes ?? 0) > 0 && replays.length > 0) {
    return `oneChargePerUserAction: ${parent.id} was resumed and replayed (${replays.map((r) => r.id).join(', ')})`;
  }
  // A resume can still use what the publish's chunks were paid for while it runs or may be resumed.
  const usable =
    parent.status === 'running' || (parent.status === 'failed' && parent.replacedBy === undefined);
  for (const chunk of chunks) {
    const tries = triesOf(chunk, parent.resumes ?? 0).map((id) => world.store.jobs.get(id));
    for (const [attempt, job] of tries.entries()) {
      if (!job) continue;
      const key = job.result?.transcriptKey;
      if (
        usable &&
        job.status === 'succeeded' &&
        typeof key === 'string' &&
        !world.outputs.objects.has(key)
      ) {
        return `noPaidResultDeleted: the transcript of chunk ${chunk.index} (try ${attempt + 1}, ${job.id}) was deleted while ${parent.id} is ${parent.status}`;
      }
      const unknown = job.submitIntent !== undefined && job.providerJobId === undefined;
      if (unknown && tries.slice(attempt + 1).some((later) => later !== undefined)) {
        return `oneChargePerUserAction: chunk ${chunk.index} was sent again under a new key after try ${attempt + 1}'s unknown outcome`;
      }
    }
  }
  return undefined;
}
