import {
  BedrockRuntimeClient,
  InvokeModelCommand,
  ModelErrorException,
  ThrottlingException,
} from '@aws-sdk/client-bedrock-runtime';
import { type AwsClientStub, mockClient } from 'aws-sdk-client-mock';
import { computeOutcomeKey } from '../../lambdas/domain/compute';
import { dayNumberOf, vectorKeyOf, vectorsManifestKey } from '../../lambdas/domain/embedding';
import { deriveJobId } from '../../lambdas/domain/idempotency';
import { executionNameOf, type Job, newJob, providerKeyOf } from '../../lambdas/domain/job';
import { stepEvent } from '../../lambdas/domain/step-event';
import type { StepEvent, WorkflowDeps } from '../../lambdas/domain/workflow';
import { runStep } from '../../lambdas/domain/workflow';
import { bedrock } from '../../lambdas/providers/bedrock';
import {
  MemoryOutputs,
  MemoryQueue,
  MemoryStore,
  MemoryTimeline,
  MemoryVectorIndex,
  MemoryWorkflow,
  ScriptedProvider,
} from './support/memory-ports';
import { memoryWorkflowDeps } from './support/workflow-deps';

/**
 * The embedding steps of audio.publish, run as the state machine runs them:
 * plan-embedding ▶ embed (one per run, each waiting for its embedding job) ▶
 * store-vectors, and what a failure or a cancel leaves behind.
 */

const clock = new Date('2026-05-01T10:00:00.000Z');
const passages = Array.from({ length: 5 }, (_, i) => ({
  start: i * 30,
  end: i * 30 + 30,
  text: `passage ${i} about forgiveness`,
}));

function setup(options: { input?: Record<string, unknown> } = {}) {
  const store = new MemoryStore();
  const parent: Job = {
    ...newJob(
      {
        id: 'job_pppppppppppppppppppppppppp',
        tenantId: 'acme/choir',
        type: 'audio.publish',
        input: { audioUrl: 'https://media.example/a.mp3', ...options.input },
        idempotencyKey: 'publish-1',
        fingerprint: 'f',
      },
      clock,
    ),
    status: 'running',
  };
  store.jobs.set(parent.id, parent);
  const outputs = new MemoryOutputs();
  const vectors = new MemoryVectorIndex();
  const provider = new ScriptedProvider(false);
  const workflow = new MemoryWorkflow();
  const timeline = new MemoryTimeline();
  const queue = new MemoryQueue();
  const deps = memoryWorkflowDeps(
    { store, provider, clock },
    {
      queue,
      timeline,
      outputs,
      workflow,
      vectors,
      embedding: { model: 'titan-text-v2', dimensions: 3, normalize: true, passagesPerJob: 2 } as const,
    },
  );
  deps satisfies WorkflowDeps;
  const step = (job: Job, name: StepEvent['step'], extra: Partial<StepEvent> = {}) =>
    runStep(deps, { step: name, jobId: job.id, executionName: executionNameOf(job), ...extra });
  const indexOutcome = (result: unknown) =>
    outputs.putOutput(
      computeOutcomeKey(parent, 'index'),
      JSON.stringify({ ok: true, result }),
      'application/json',
    );
  return { deps, store, outputs, vectors, provider, workflow, timeline, queue, parent, step, indexOutcome };
}

/** Settles an embedding job as its own workflow would: its embeddings kept, its result naming them. */
async function embedded(
  world: ReturnType<typeof setup>,
  jobId: string,
  vectorOf: (passage: number) => number[],
) {
  const child = world.store.jobs.get(jobId) as Job;
  const { from, count } = child.input as { from: number; count: number };
  const key = `outputs/acme%2Fchoir/${world.parent.id}/embeddings/${child.parent?.index}/embeddings.json`;
  await world.outputs.putOutput(
    key,
    JSON.stringify({
      from,
      model: 'amazon.titan-embed-text-v2:0',
      dimensions: 3,
      embeddings: Array.from({ length: count }, (_, i) => vectorOf(from + i)),
    }),
    'application/json',
  );
  world.store.jobs.set(jobId, { ...child, status: 'succeeded', result: { embeddingsKey: key, count } });
}

describe('plan-embedding', () => {
  it('cuts the passages on the job into runs of passagesPerJob, with keys derived from the job’s', async () => {
    const world = setup();
    await world.indexOutcome({ transcriptKey: 't', passages });
    const plan = (await world.step(world.parent, 'plan-embedding')) as {
      passagesKey: string;
      runs: { index: number; from: number; count: number; idempotencyKey: string }[];
    };
    // Derived from the job's provider key, as its chunks' are: an operator's requeue renews them.
    const key = providerKeyOf(world.parent);
    expect(plan.runs).toEqual([
      { index: 0, from: 0, count: 2, idempotencyKey: `${key}:embed-0` },
      { index: 1, from: 2, count: 2, idempotencyKey: `${key}:embed-1` },
      { index: 2, from: 4, count: 1, idempotencyKey: `${key}:embed-2` },
    ]);
    expect(plan.passagesKey).toBe(`outputs/acme%2Fchoir/${world.parent.id}/embeddings/passages.json`);
    // Each run goes whole, as the state machine hands it on, into an embed step's strict payload.
    for (const run of plan.runs) {
      const payload = {
        step: 'embed',
        jobId: world.parent.id,
        taskToken: 't',
        passagesKey: plan.passagesKey,
        run,
      };
      expect(stepEvent.parse(payload)).toEqual(payload);
    }
    const stored = await world.outputs.getOutput(plan.passagesKey);
    expect(JSON.parse(new TextDecoder().decode(stored))).toEqual(passages);
  });

  it('reads passages the index step kept in a file, and plans no run for a recording with none', async () => {
    const world = setup();
    await world.outputs.putOutput(
      'outputs/acme%2Fchoir/x/passages.json',
      JSON.stringify(passages),
      'application/json',
    );
    await world.indexOutcome({ transcriptKey: 't', passagesKey: 'outputs/acme%2Fchoir/x/passages.json' });
    const plan = (await world.step(world.parent, 'plan-embedding')) as { runs: unknown[] };
    expect(plan.runs).toHaveLength(3);

    const silent = setup();
    await silent.indexOutcome({ transcriptKey: 't', passages: [] });
    expect(await silent.step(silent.parent, 'plan-embedding')).toMatchObject({ runs: [] });
  });
});

describe('embed', () => {
  it('makes the run’s embedding job on the embedding provider, with the deployment’s model on it', async () => {
    const world = setup();
    const run = { index: 1, from: 2, count: 2, idempotencyKey: 'publish-1:embed-1' };
    await world.step(world.parent, 'embed', { taskToken: 'tok-1', run, passagesKey: 'outputs/p.json' });
    const child = world.store.jobs.get(deriveJobId('acme/choir', 'publish-1:embed-1')) as Job;
    expect(child).toMatchObject({
      type: 'audio.publish.embedding',
      provider: 'bedrock',
      status: 'queued',
      input: {
        passagesKey: 'outputs/p.json',
        from: 2,
        count: 2,
        model: 'titan-text-v2',
        dimensions: 3,
        normalize: true,
      },
      parent: { jobId: world.parent.id, index: 1, stage: 'embed', taskToken: 'tok-1' },
    });
    expect(world.queue.messages.map((message) => message.jobId)).toEqual([child.id]);
    expect(world.timeline.events.get(world.parent.id)?.map((event) => event.type)).toEqual([
      'embedding.submitted',
    ]);
  });

  it('makes the run again under a new key when its job failed, once', async () => {
    const world = setup();
    const run = { index: 0, from: 0, count: 2, idempotencyKey: 'publish-1:embed-0' };
    await world.step(world.parent, 'embed', { taskToken: 'tok-1', run, passagesKey: 'p' });
    const first = deriveJobId('acme/choir', 'publish-1:embed-0');
    world.store.jobs.set(first, { ...(world.store.jobs.get(first) as Job), status: 'failed' });
    await world.step(world.parent, 'embed', { taskToken: 'tok-2', run, passagesKey: 'p' });
    const second = world.store.jobs.get(deriveJobId('acme/choir', 'publish-1:embed-0.retry-1')) as Job;
    expect(second).toMatchObject({ status: 'queued', parent: { taskToken: 'tok-2', stage: 'embed' } });
  });
});

describe('an embedding job on a provider that answers at once', () => {
  it('records the answer as the outcome before it settles the submission, and await resumes at once', async () => {
    const world = setup();
    await world.outputs.putOutput(
      `outputs/acme%2Fchoir/${world.parent.id}/embeddings/passages.json`,
      JSON.stringify(passages),
      'application/json',
    );
    const child: Job = {
      ...newJob(
        {
          id: 'job_cccccccccccccccccccccccccc',
          tenantId: 'acme/choir',
          type: 'audio.publish.embedding',
          provider: 'bedrock',
          input: {
            passagesKey: `outputs/acme%2Fchoir/${world.parent.id}/embeddings/passages.json`,
            from: 0,
            count: 2,
            model: 'titan-text-v2',
            dimensions: 3,
            normalize: true,
          },
          idempotencyKey: 'publish-1:embed-0',
          fingerprint: 'f',
          parent: { jobId: world.parent.id, index: 0, stage: 'embed', taskToken: 'parent-token' },
        },
        clock,
      ),
      status: 'running',
    };
    world.store.jobs.set(child.id, child);
    const output = {
      model: 'amazon.titan-embed-text-v2:0',
      dimensions: 3,
      embeddings: [
        [1, 0, 0],
        [0, 1, 0],
      ],
      inputTokens: 9,
      calls: 2,
    };
    world.provider.script.push({ providerJobId: 'bedrock_1', answer: { output } });
    await world.step(child, 'submit');
    expect(world.provider.submissions[0]?.request).toEqual({
      model: 'titan-text-v2',
      texts: ['passage 0 about forgiveness', 'passage 1 about forgiveness'],
      purpose: 'document',
      dimensions: 3,
      normalize: true,
    });
    const submitted = world.store.jobs.get(child.id) as Job;
    expect(submitted).toMatchObject({ providerJobId: 'bedrock_1', providerOutcome: { status: 'succeeded' } });
    expect(submitted.submitIntent).toBeUndefined();

    await world.step(child, 'await', { taskToken: 'own-token' });
    expect(world.workflow.completed).toContainEqual({
      taskToken: 'own-token',
      output: { providerStatus: 'succeeded' },
    });

    await world.step(child, 'finalize');
    const done = world.store.jobs.get(child.id) as Job;
    expect(done).toMatchObject({ status: 'succeeded', result: { count: 2, inputTokens: 9, calls: 2 } });
    const kept = await world.outputs.getOutput(done.result?.embeddingsKey as string);
    expect(JSON.parse(new TextDecoder().decode(kept))).toEqual({
      from: 0,
      model: 'amazon.titan-embed-text-v2:0',
      dimensions: 3,
      embeddings: output.embeddings,
    });
    // The parent's embed state hears of it with the run's job.
    expect(world.workflow.completed).toContainEqual({
      taskToken: 'parent-token',
      output: { index: 0, jobId: child.id },
    });
    // That answer goes whole, as the state machine gathers it, into store-vectors' strict payload.
    const embedded = world.workflow.completed
      .filter((completion) => completion.taskToken === 'parent-token')
      .map((completion) => completion.output);
    const payload = { step: 'store-vectors', jobId: world.parent.id, passagesKey: 'p', embedded };
    expect(stepEvent.parse(payload)).toEqual(payload);
  });

  it('refuses a run whose passages are another job’s', async () => {
    const world = setup();
    const child: Job = {
      ...newJob(
        {
          id: 'job_dddddddddddddddddddddddddd',
          tenantId: 'acme/choir',
          type: 'audio.publish.embedding',
          provider: 'bedrock',
          input: {
            passagesKey: 'outputs/acme%2Fchoir/job_someoneelse/embeddings/passages.json',
            from: 0,
            count: 1,
            model: 'titan-text-v2',
            dimensions: 3,
            normalize: true,
          },
          idempotencyKey: 'k',
          fingerprint: 'f',
          parent: { jobId: world.parent.id, index: 0, stage: 'embed' },
        },
        clock,
      ),
      status: 'running',
    };
    world.store.jobs.set(child.id, child);
    await expect(world.step(child, 'submit')).rejects.toThrow(
      '[input_invalid] The input names an output of another job.',
    );
    expect(world.provider.submissions).toHaveLength(0);
  });
});

describe('an embedding job throttled partway through its calls', () => {
  // Bedrock's own client, stubbed: the adapter's calls and classification are the real ones.
  let client: AwsClientStub<BedrockRuntimeClient>;
  beforeAll(() => {
    client = mockClient(BedrockRuntimeClient);
  });
  afterEach(() => client.reset());
  afterAll(() => client.restore());

  /** Answers each call with a vector naming its passage, refusing the calls `refuse` names (counted from 1). */
  function bedrockAnswering(refuse: ReadonlyMap<number, Error>) {
    let call = 0;
    client.on(InvokeModelCommand).callsFake((input: { body: string }) => {
      call++;
      const refusal = refuse.get(call);
      if (refusal) throw refusal;
      const { inputText } = JSON.parse(input.body) as { inputText: string };
      const passage = passages.findIndex((p) => p.text === inputText);
      return {
        body: new TextEncoder().encode(JSON.stringify({ embedding: [passage, 1], inputTextTokenCount: 4 })),
      };
    });
  }
  const answeredCalls = () => client.commandCalls(InvokeModelCommand).length;

  function throttledWorld() {
    const world = setup();
    const adapter = bedrock({
      baseUrl: '',
      webhookSecret: 'none',
      deduplicates: false,
      submitTimeoutMs: 1000,
      readTimeoutMs: 1000,
    });
    const deps = { ...world.deps, providers: async () => adapter };
    const passagesKey = `outputs/acme%2Fchoir/${world.parent.id}/embeddings/passages.json`;
    const child: Job = {
      ...newJob(
        {
          id: 'job_eeeeeeeeeeeeeeeeeeeeeeeeee',
          tenantId: 'acme/choir',
          type: 'audio.publish.embedding',
          provider: 'bedrock',
          input: { passagesKey, from: 0, count: 5, model: 'titan-text-v2', dimensions: 2, normalize: true },
          idempotencyKey: 'publish-1:embed-0',
          fingerprint: 'f',
          parent: { jobId: world.parent.id, index: 0, stage: 'embed', taskToken: 'parent-token' },
        },
        clock,
      ),
      status: 'running',
    };
    world.store.jobs.set(child.id, child);
    const step = (name: StepEvent['step'], extra: Partial<StepEvent> = {}) => {
      const job = world.store.jobs.get(child.id) as Job;
      return runStep(deps, { step: name, jobId: job.id, executionName: executionNameOf(job), ...extra });
    };
    return { ...world, child, step, passagesKey };
  }

  it('keeps the answered calls, pauses the provider, and the next run makes only the rest: five calls paid, none twice', async () => {
    const world = throttledWorld();
    await world.outputs.putOutput(world.passagesKey, JSON.stringify(passages), 'application/json');
    bedrockAnswering(
      new Map([
        [3, new ThrottlingException({ $metadata: { httpStatusCode: 429 }, message: 'Too many requests' })],
      ]),
    );

    await expect(world.step('submit')).rejects.toMatchObject({ name: 'ProviderPaused' });

    const waiting = world.store.jobs.get(world.child.id) as Job;
    expect(waiting).toMatchObject({ status: 'queued', attempts: 0, answeredCalls: 2 });
    expect(waiting.submitIntent).toBeUndefined();
    expect((await world.deps.slots('bedrock').state()).pauseReason).toBe(
      'bedrock answered ThrottlingException (429) to call 3; the 2 answered before it are kept.',
    );
    expect(answeredCalls()).toBe(3);

    // The pause over, a grant starts the job's next run.
    client.resetHistory();
    await world.step('prepare', { executionName: executionNameOf(waiting) });
    await world.step('submit');
    const sent = client
      .commandCalls(InvokeModelCommand)
      .map((call) => JSON.parse(call.args[0].input.body as string));
    expect(sent.map((body) => body.inputText)).toEqual(passages.slice(2).map((p) => p.text));

    await world.step('await', { taskToken: 'own-token' });
    await world.step('finalize');
    const done = world.store.jobs.get(world.child.id) as Job;
    expect(done).toMatchObject({ status: 'succeeded', result: { count: 5, inputTokens: 20, calls: 5 } });
    expect(done.answeredCalls).toBeUndefined();
    const kept = await world.outputs.getOutput(done.result?.embeddingsKey as string);
    expect(JSON.parse(new TextDecoder().decode(kept)).embeddings).toEqual(passages.map((_, i) => [i, 1]));
  });

  it('sends a run whose call failed in the model after answered calls to review: those may be billed twice', async () => {
    const world = throttledWorld();
    await world.outputs.putOutput(world.passagesKey, JSON.stringify(passages), 'application/json');
    bedrockAnswering(
      new Map([[3, new ModelErrorException({ $metadata: { httpStatusCode: 424 }, message: 'boom' })]]),
    );

    await expect(world.step('submit')).rejects.toMatchObject({ name: 'NeedsReview' });
    expect(world.store.jobs.get(world.child.id)).toMatchObject({
      status: 'needs_review',
      error: { code: 'ambiguous_submission' },
    });
  });
});

describe('store-vectors', () => {
  async function planned(input: Record<string, unknown> = {}) {
    const world = setup({ input });
    await world.indexOutcome({ transcriptKey: 't', passages });
    const plan = (await world.step(world.parent, 'plan-embedding')) as {
      passagesKey: string;
      runs: { index: number; idempotencyKey: string }[];
    };
    const runs = plan.runs.map((run) => ({
      index: run.index,
      jobId: deriveJobId('acme/choir', run.idempotencyKey),
    }));
    for (const run of plan.runs) {
      await world.step(world.parent, 'embed', {
        taskToken: `tok-${run.index}`,
        run: run as never,
        passagesKey: plan.passagesKey,
      });
    }
    for (const run of runs) await embedded(world, run.jobId, (p) => [p, 1, 0]);
    return { world, plan, runs };
  }

  it('puts every passage’s vector with what search filters by and shows, after its manifest', async () => {
    const { world, plan, runs } = await planned({
      title: 'Seventy times seven',
      date: '2026-03-01',
      labels: ['lent'],
    });
    await world.step(world.parent, 'store-vectors', { passagesKey: plan.passagesKey, embedded: runs });
    expect([...world.vectors.vectors.keys()]).toEqual(
      passages.map((_, i) => `acme%2Fchoir/${world.parent.id}/${i}`),
    );
    expect(world.vectors.vectors.get(vectorKeyOf(world.parent, 3))).toEqual({
      key: `acme%2Fchoir/${world.parent.id}/3`,
      data: [3, 1, 0],
      metadata: {
        tenant: 'acme/choir',
        item: world.parent.id,
        date: dayNumberOf('2026-03-01'),
        labels: ['lent'],
        title: 'Seventy times seven',
        passage: 3,
        start: 90,
        end: 120,
        text: 'passage 3 about forgiveness',
      },
    });
    const manifest = await world.outputs.getOutput(vectorsManifestKey(world.parent));
    expect(JSON.parse(new TextDecoder().decode(manifest))).toEqual({ count: 5 });
    expect(world.timeline.events.get(world.parent.id)?.at(-1)).toMatchObject({
      type: 'vectors.stored',
      detail: '5 passages searchable',
    });
  });

  it('dates a recording published without a date by the day it was published', async () => {
    const { world, plan, runs } = await planned();
    await world.step(world.parent, 'store-vectors', { passagesKey: plan.passagesKey, embedded: runs });
    expect(world.vectors.vectors.get(vectorKeyOf(world.parent, 0))?.metadata).toMatchObject({
      date: dayNumberOf('2026-05-01'),
      labels: [],
    });
  });

  it('refuses a run whose job has no embeddings, storing nothing', async () => {
    const { world, plan, runs } = await planned();
    const last = runs[2] as { jobId: string };
    world.store.jobs.set(last.jobId, { ...(world.store.jobs.get(last.jobId) as Job), status: 'failed' });
    await expect(
      world.step(world.parent, 'store-vectors', { passagesKey: plan.passagesKey, embedded: runs }),
    ).rejects.toThrow(/Embedding run 2 .* has no embeddings to store/);
    expect(world.vectors.vectors.size).toBe(0);
  });

  it('takes its vectors out again when the job was canceled while they went in', async () => {
    const { world, plan, runs } = await planned();
    const put = world.vectors.put.bind(world.vectors);
    world.vectors.put = async (vectors) => {
      await put(vectors);
      world.store.jobs.set(world.parent.id, {
        ...(world.store.jobs.get(world.parent.id) as Job),
        status: 'canceled',
      });
    };
    await expect(
      world.step(world.parent, 'store-vectors', { passagesKey: plan.passagesKey, embedded: runs }),
    ).rejects.toMatchObject({ name: 'JobSettled' });
    expect(world.vectors.vectors.size).toBe(0);
  });

  it('leaves no vectors behind a publish that fails or is canceled afterwards', async () => {
    const failing = await planned();
    await failing.world.step(failing.world.parent, 'store-vectors', {
      passagesKey: failing.plan.passagesKey,
      embedded: failing.runs,
    });
    expect(failing.world.vectors.vectors.size).toBe(5);
    await failing.world.step(failing.world.parent, 'fail', {
      error: { Error: 'States.TaskFailed', Cause: 'boom' },
    });
    expect(failing.world.store.jobs.get(failing.world.parent.id)?.status).toBe('failed');
    expect(failing.world.vectors.vectors.size).toBe(0);
    expect(await failing.world.outputs.getOutput(vectorsManifestKey(failing.world.parent))).toBeUndefined();

    const canceled = await planned();
    await canceled.world.step(canceled.world.parent, 'store-vectors', {
      passagesKey: canceled.plan.passagesKey,
      embedded: canceled.runs,
    });
    const { parent, store } = canceled.world;
    store.jobs.set(parent.id, { ...(store.jobs.get(parent.id) as Job), status: 'canceled' });
    await canceled.world.step(parent, 'settle');
    expect(canceled.world.vectors.vectors.size).toBe(0);
  });
});
