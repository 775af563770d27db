import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { loadSettings, publishRenditionsKbps } from '../../config/settings';
import { DynamoDbJobStore, toItem } from '../../lambdas/adapters/dynamodb-job-store';
import { DynamoDbMediaStore } from '../../lambdas/adapters/dynamodb-media-store';
import { DynamoDbTimeline } from '../../lambdas/adapters/dynamodb-timeline';
import { EventBridgeEvents } from '../../lambdas/adapters/eventbridge-events';
import { S3OutputStore } from '../../lambdas/adapters/s3-output-store';
import { S3VectorsIndex } from '../../lambdas/adapters/s3-vectors-index';
import { dayNumberOf, vectorKeyOf, vectorsManifestKey } from '../../lambdas/domain/embedding';
import { deriveJobId } from '../../lambdas/domain/idempotency';
import { type Job, newJob } from '../../lambdas/domain/job';
import {
  createMediaItem,
  deleteMediaItem,
  type MediaItem,
  mediaVectorMetadata,
  type RetireDeps,
  recordVectorRevision,
  retireDue,
  type StartVersionDeps,
  startVersion,
  switchToVersion,
  updateMediaItem,
} from '../../lambdas/domain/media-library';
import type { OutputStore } from '../../lambdas/domain/ports';
import { rootOutputPrefix } from '../../lambdas/domain/publish';
import { search } from '../../lambdas/domain/search';
import { startDynaliteTables } from '../../local/harness/dynalite-tables';
import { PRICES_AS_OF, PRICES_REGION, prices } from '../prices';
import { fmt, print, round } from '../support/common';
import {
  type Counts,
  countIndexWrites,
  countingDocuments,
  countsBetween,
  emptyCounts,
  memoryEventBus,
  memoryS3,
  memoryS3Vectors,
  snapshot,
} from '../support/counting-aws';
import type { EmbeddingFigures } from './embedding';
import type { MediaFigures } from './media';
import type { SearchFigures } from './search';

/**
 * What each kind of change to a media item costs in AWS. The media library's
 * own functions (lambdas/domain/media-library.ts) run through their real
 * adapters: DynamoDB on dynalite (its units as it reports them, index writes
 * by DynamoDB's rules), S3, S3 Vectors and EventBridge in memory behind the
 * adapters' own SDK calls, so every request they send is counted. The item's
 * current version is a 60-minute sermon of `PASSAGES` passages (90: one per
 * 40 s, as the search section assumes) with the outputs a publish leaves.
 * A metadata change must call no provider, start no workflow and change no
 * vector's data: the section fails if one does. Publishing a new version
 * adds the publish's own cost, taken from the media, embedding and search
 * sections' figures (this run's, or those in bench/results.json).
 */

export const PASSAGES = 90;
const AUDIO_SECONDS = 3600;
const TENANT = 'bench';
/** The search section's passage: 40 s of speech, about 560 bytes of text. */
const PASSAGE_SECONDS = 40;
const PASSAGE_TEXT_BYTES = 560;
/** One search asks the index for twice the default 10 answers. */
const SEARCH_HITS = 20;
/** The reconciler's passes, one a minute (RECONCILE_SCHEDULE's default). */
const PASS_MS = 60_000;
const RESULTS_FILE = join(__dirname, '..', 'results.json');

export type ChangeKind =
  | 'create'
  | 'title-speaker'
  | 'labels-date'
  | 'new-version'
  | 'delete'
  | 'search-per-item';

export interface CostLine {
  readonly item: string;
  readonly quantity: number;
  readonly usd: number;
  readonly basis: string;
}

export interface ChangeCost {
  readonly kind: ChangeKind;
  readonly title: string;
  /** What the media library's functions sent, counted. */
  readonly counts: Counts;
  /** Bedrock or Deepgram calls, and jobs (workflows) started, by the change itself. */
  readonly providerCalls: number;
  readonly jobsStarted: number;
  /** The reconciler passes its retirements took (each pass runs on the schedule anyway). */
  readonly reconcilerPasses?: number;
  readonly lines: readonly CostLine[];
  readonly usd: number;
}

export interface PublishCost {
  readonly source: string;
  readonly lines: readonly CostLine[];
  readonly usd: number;
  readonly stateTransitions: number;
  readonly lambdaInvocations: number;
  readonly notIn: readonly string[];
}

export interface MediaChangesFigures {
  readonly assumptions: {
    readonly passages: number;
    readonly audioSeconds: number;
    readonly outputsPerVersion: number;
    readonly dimensions: number;
    readonly graceSeconds: number;
    readonly searchHits: number;
  };
  readonly changes: readonly ChangeCost[];
  /** The publish of a new version, from the other sections' figures; absent when they are missing. */
  readonly publish?: PublishCost;
  readonly prices: { readonly region: string; readonly asOf: string; readonly file: string };
}

/** What the change's own calls cost at list prices, line by line (a zero quantity is left out). */
export function priceCounts(counts: Counts, api: { restRequests: number; invocations: number }): CostLine[] {
  const r = counts.requests;
  const sum = (...keys: string[]) => keys.reduce((total, key) => total + (r[key] ?? 0), 0);
  const d = counts.dynamodb;
  const lines: CostLine[] = [
    {
      item: 'API Gateway REST requests',
      quantity: api.restRequests,
      usd: api.restRequests * prices.apiGatewayRestPerRequest.usd,
      basis: 'the change is one API request',
    },
    {
      item: 'Lambda requests',
      quantity: api.invocations,
      usd: api.invocations * prices.lambdaPerRequest.usd,
      basis:
        'the api function (its duration not counted; the authorizer’s answer is cached, AUTHORIZER_CACHE_SECONDS)',
    },
    {
      item: 'DynamoDB write units',
      quantity: d.writeUnits + d.indexWriteUnits,
      usd: (d.writeUnits + d.indexWriteUnits) * prices.dynamoDbPerWriteRequestUnit.usd,
      basis: `counted: ${d.writes} writes, table ${fmt(d.writeUnits, 1)} + indexes ${fmt(d.indexWriteUnits, 1)} units`,
    },
    {
      item: 'DynamoDB read units',
      quantity: d.readUnits,
      usd: d.readUnits * prices.dynamoDbPerReadRequestUnit.usd,
      basis: `counted: ${d.reads} reads`,
    },
    {
      item: 'S3 GET',
      quantity: sum('s3:GetObject'),
      usd: sum('s3:GetObject') * prices.s3GetPerRequest.usd,
      basis: 'counted',
    },
    {
      item: 'S3 PUT and LIST',
      quantity: sum('s3:PutObject', 's3:ListObjectsV2'),
      usd: sum('s3:PutObject', 's3:ListObjectsV2') * prices.s3ListPerRequest.usd,
      basis: 'counted; DeleteObjects and DeleteObject are free',
    },
    {
      item: 'S3 Vectors PutVectors (GB uploaded)',
      quantity: counts.vectors.bytesPut / 1024 ** 3,
      usd: (counts.vectors.bytesPut / 1024 ** 3) * prices.s3VectorsPutPerGb.usd,
      basis: `counted: ${counts.vectors.written} vectors, ${sum('s3vectors:PutVectors')} requests`,
    },
    {
      item: 'S3 Vectors GetVectors and DeleteVectors',
      quantity: sum('s3vectors:GetVectors', 's3vectors:DeleteVectors'),
      usd: sum('s3vectors:GetVectors', 's3vectors:DeleteVectors') * prices.s3VectorsOtherPerRequest.usd,
      basis: `counted: ${counts.vectors.read} vectors read, ${counts.vectors.deleted} deleted`,
    },
    {
      item: 'EventBridge events',
      quantity: counts.events,
      usd: counts.events * prices.eventBridgeCustomEventPer64Kb.usd,
      basis: 'counted: 64 KB chunks of the entries put',
    },
  ];
  return lines.filter((line) => line.quantity > 0);
}

const total = (lines: readonly CostLine[]) => lines.reduce((sum, line) => sum + line.usd, 0);

/** What the section relies on of the other sections' figures. */
interface PublishFigures {
  readonly startedAt: string;
  readonly media?: MediaFigures;
  readonly embedding?: EmbeddingFigures;
  readonly search?: SearchFigures;
}

/**
 * A new version's publish for `passages` passages of `audioSeconds`, from the
 * media section (compute per audio hour; state transitions of the parent and
 * of each chunk job), the embedding section (what a run costs, less its own
 * tokens) and the search section (Titan tokens and PutVectors per hour).
 */
export function publishCost(
  figures: PublishFigures,
  source: string,
  passages: number,
  audioSeconds: number,
): PublishCost | undefined {
  const { media, embedding, search: searchFigures } = figures;
  if (!media || !embedding || !searchFigures || !media.transcription.measured) return undefined;
  const settings = loadSettings({});
  const hours = audioSeconds / 3600;
  const lambda = media.cost.compute.find((c) => c.place === 'lambda');
  const run = [...media.transcription.runs]
    .filter((r) => r.status === 'succeeded' && r.chunks > 1)
    .sort((a, b) => b.chunks - a.chunks)[0];
  if (!lambda || !run) return undefined;
  const chunks = Math.ceil(audioSeconds / settings.transcribeChunkSeconds);
  const perChunk = (run.stateTransitions - run.parentStateTransitions) / run.chunks;
  const transitions = Math.round(run.parentStateTransitions + chunks * perChunk);
  const runs = Math.ceil(passages / settings.embeddingPassagesPerJob);
  const perRun = embedding.longhaul.cost;
  const tokensLine = perRun.lines.find((line) => line.item.startsWith('Bedrock input tokens'));
  const runUsd = (perRun.usdPerThousandRuns - (tokensLine?.usdPerThousandRuns ?? 0)) / 1000;
  const runInvocations = Object.values(embedding.longhaul.perRun.charged.invocations).reduce(
    (s, n) => s + n,
    0,
  );
  const c = searchFigures.cost.perHour;
  const lines: CostLine[] = [
    {
      item: 'compute steps on Lambda (probe, transcode, split)',
      quantity: 3,
      usd: lambda.usdPerAudioHour * hours,
      basis: `media section: $${fmt(lambda.usdPerAudioHour, 5)} an audio hour, measured step time x list price`,
    },
    {
      item: 'Step Functions state transitions',
      quantity: transitions,
      usd: transitions * prices.stepFunctionsStandardPerTransition.usd,
      basis: `media section: the job's ${run.parentStateTransitions} + ${fmt(perChunk, 1)} a chunk job x ${chunks} chunks of ${settings.transcribeChunkSeconds} s`,
    },
    {
      item: `embedding runs of ${settings.embeddingPassagesPerJob} passages, less their tokens`,
      quantity: runs,
      usd: runs * runUsd,
      basis: `embedding section: $${fmt(runUsd * 1000, 4)} per 1,000 runs (transitions, Lambda, DynamoDB, SQS, S3)`,
    },
    {
      item: 'Titan Text Embeddings V2 input tokens',
      quantity: c.tokensPerHour.titan * hours,
      usd: c.embedTitanUsd * hours,
      basis: 'search section: the hour’s words at 4.7 characters a token',
    },
    {
      item: 'S3 Vectors PutVectors (GB uploaded)',
      quantity: (c.passagesPerHour * c.storedBytesPerVector * hours) / 1024 ** 3,
      usd: c.putUsd * hours,
      basis: `search section: ${fmt(c.passagesPerHour * hours, 0)} vectors of ${c.storedBytesPerVector} bytes`,
    },
  ];
  return {
    source,
    lines,
    usd: total(lines),
    stateTransitions: transitions,
    lambdaInvocations: round(3 + runs * runInvocations, 1),
    notIn: [
      `Deepgram's own charge for ${chunks} chunks (not AWS)`,
      "the job's and its chunk jobs' intake, dispatch and bookkeeping writes (the cost section prices a whole job's)",
      'the workflow steps’ Lambda invocations of the job and its chunk jobs (not counted by the media section)',
      'S3 and S3 Vectors storage, CloudWatch, data transfer',
    ],
  };
}

/** Reads the figures of the sections a publish's cost comes from: this run's, else the last committed run's. */
function publishFigures(current: Partial<PublishFigures> | undefined): {
  figures: PublishFigures;
  source: string;
} {
  if (current?.media && current.embedding && current.search) {
    return { figures: current as PublishFigures, source: 'this run' };
  }
  const committed = JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as PublishFigures;
  return { figures: committed, source: `bench/results.json of ${committed.startedAt}` };
}

/** The keys a published hour leaves under its job, as assumed here: its stream, chunks, transcripts, passages, runs. */
export function outputsOfVersion(job: Pick<Job, 'id' | 'tenantId'>, passages: number, audioSeconds: number) {
  const settings = loadSettings({});
  const root = rootOutputPrefix(job);
  const renditions = publishRenditionsKbps(settings);
  const segments = Math.ceil(audioSeconds / settings.publishSegmentSeconds);
  const chunks = Math.ceil(audioSeconds / settings.transcribeChunkSeconds);
  const runs = Math.ceil(passages / settings.embeddingPassagesPerJob);
  return [
    `${root}hls/master.m3u8`,
    `${root}served/master.m3u8`,
    ...renditions.flatMap((kbps) => [
      `${root}hls/${kbps}k/index.m3u8`,
      `${root}served/${kbps}k/index.m3u8`,
      `${root}hls/${kbps}k/init.mp4`,
      ...Array.from({ length: segments }, (_, i) => `${root}hls/${kbps}k/segment-${i}.m4s`),
    ]),
    ...Array.from({ length: chunks }, (_, i) => [
      `${root}chunks/${i}.flac`,
      `${root}chunks/${i}.json`,
    ]).flat(),
    `${root}transcript.json`,
    `${root}passages.json`,
    ...Array.from({ length: runs }, (_, i) => `${root}embeddings/run-${i}.json`),
  ];
}

/**
 * The changes in the order a life of an item has them, on one item whose
 * current version has `passages` (created, retitled, relabelled, a new
 * version published over it, deleted), then one search over a second item.
 * Bedrock and Deepgram are reached only through a job's cancel (its provider's
 * cancel) and a new job (its publish): both are counted as such.
 */
export async function measureChanges(passages = PASSAGES): Promise<{
  changes: Omit<ChangeCost, 'lines' | 'usd'>[];
  outputsPerVersion: number;
  graceSeconds: number;
}> {
  const settings = loadSettings({});
  const db = await startDynaliteTables();
  const counts = emptyCounts();
  const stopIndexCount = countIndexWrites(counts);
  try {
    // Today: the job store treats a job finished past its retention as gone.
    let clock = Date.now();
    const now = () => new Date(clock);
    const documents = countingDocuments(db.documents, counts);
    const table = db.jobTableName;
    const media = new DynamoDbMediaStore(documents, table);
    const jobs = new DynamoDbJobStore(documents, { tableName: table, retentionDays: 30 });
    // Setting the scene (a publish's outputs, its job) goes through uncounted clients.
    const setupJobs = new DynamoDbJobStore(db.documents, { tableName: table, retentionDays: 30 });
    const setupMedia = new DynamoDbMediaStore(db.documents, table);
    const s3 = memoryS3(counts);
    const outputs: OutputStore = new S3OutputStore(s3.client, 'outputs', 3600);
    const index = memoryS3Vectors(counts);
    const setupOutputs = new S3OutputStore(memoryS3(emptyCounts(), s3.objects).client, 'outputs', 3600);
    const setupVectors = new S3VectorsIndex(
      memoryS3Vectors(emptyCounts(), index.vectors).client,
      'vectors',
      'passages',
      'cosine',
    );
    const vectors = new S3VectorsIndex(index.client, 'vectors', 'passages', 'cosine');
    const events = new EventBridgeEvents(memoryEventBus(counts).client, 'longhaul');
    const calls = { providerCalls: 0, jobsStarted: 0 };
    const count = (key: string) => {
      counts.requests[key] = (counts.requests[key] ?? 0) + 1;
    };
    const cancel = async () => {
      calls.providerCalls++;
    };
    const deps = { media, now, events, jobs, outputs, vectors, graceSeconds: settings.mediaGraceSeconds };
    const startDeps: StartVersionDeps = {
      ...deps,
      // Intake's submit starts the version's job, whose workflow is the publish: counted, priced apart.
      submit: async ({ idempotencyKey, input, media: version }) => {
        calls.jobsStarted++;
        const job: Job = {
          ...newJob(
            {
              id: deriveJobId(TENANT, idempotencyKey),
              tenantId: TENANT,
              type: 'audio.publish',
              input,
              idempotencyKey,
              fingerprint: 'f'.repeat(64),
              media: version,
            },
            now(),
          ),
          status: 'running',
        };
        await setupJobs.create(job);
        return { job, replayed: false };
      },
    };
    const retireDeps: RetireDeps = {
      ...deps,
      timeline: new DynamoDbTimeline(documents, { tableName: table, retentionDays: 30 }),
      workflow: {
        status: async () => {
          count('states:DescribeExecution');
          return 'SUCCEEDED';
        },
      },
      deleteInput: async () => count('s3:DeleteObject'),
      cancel: async () => {
        calls.providerCalls++;
      },
      quietSeconds: settings.computeTimeoutSeconds,
    };

    /** Counts what `act` sends, and the provider calls and jobs it makes. */
    const measure = async (
      kind: ChangeKind,
      title: string,
      act: () => Promise<number | undefined>,
    ): Promise<Omit<ChangeCost, 'lines' | 'usd'>> => {
      const before = snapshot(counts);
      const callsBefore = { ...calls };
      const passes = await act();
      return {
        kind,
        title,
        counts: countsBetween(before, counts),
        providerCalls: calls.providerCalls - callsBefore.providerCalls,
        jobsStarted: calls.jobsStarted - callsBefore.jobsStarted,
        ...(passes === undefined ? {} : { reconcilerPasses: passes }),
      };
    };

    /** Runs the reconciler's retirements pass by pass until none is left; answers the passes. */
    const retireAll = async (): Promise<number> => {
      for (let pass = 1; pass <= 60; pass++) {
        await retireDue(retireDeps, settings.mediaRetirementsPerPass);
        if ((await setupMedia.dueRetirements(new Date('9999-12-31T00:00:00Z'), 1)).length === 0) return pass;
        clock += PASS_MS;
      }
      throw new Error('retirements still waiting after 60 reconciler passes');
    };

    const startOf = async (item: MediaItem, key: string, audioRef: string): Promise<Job> =>
      (
        await startVersion(startDeps, {
          tenantId: TENANT,
          mediaId: item.id,
          idempotencyKey: key,
          request: { audioRef },
          jobIdOf: (k) => deriveJobId(TENANT, k),
        })
      ).job;

    /** What a version's publish leaves: its outputs, its vectors with the item's metadata, its job succeeded. */
    const layDown = async (job: Job): Promise<Job> => {
      const current = (await setupMedia.get(TENANT, job.media?.id ?? '')) as MediaItem;
      const store = setupOutputs;
      for (const output of outputsOfVersion(job, passages, AUDIO_SECONDS)) {
        await store.putOutput(output, '#EXTM3U\n', 'application/octet-stream');
      }
      await store.putOutput(vectorsManifestKey(job), JSON.stringify({ count: passages }), 'application/json');
      await recordVectorRevision(store, job, current.metadataRevision);
      const metadata = mediaVectorMetadata(current, job);
      await setupVectors.put(
        Array.from({ length: passages }, (_, passage) => ({
          key: vectorKeyOf(job, passage),
          data: Array.from({ length: settings.embeddingDimensions }, (_, d) => Math.sin(passage + d)),
          metadata: {
            tenant: TENANT,
            item: metadata.item,
            title: metadata.title,
            date: dayNumberOf(metadata.date),
            labels: [...metadata.labels],
            passage,
            start: passage * PASSAGE_SECONDS,
            end: (passage + 1) * PASSAGE_SECONDS,
            text: 'x'.repeat(PASSAGE_TEXT_BYTES),
          },
        })),
      );
      const at = now().toISOString();
      const done: Job = {
        ...job,
        status: 'succeeded',
        statusAt: at,
        finishedAt: at,
        result: {
          stream: { playlistKey: `${rootOutputPrefix(job)}hls/master.m3u8`, renditions: [] },
          searchable: true,
        },
      };
      await db.documents.send(new PutCommand({ TableName: table, Item: toItem(done, 30) }));
      return done;
    };

    const create = (key: string) =>
      createMediaItem(deps, {
        tenantId: TENANT,
        idempotencyKey: key,
        request: { title: 'Advent 1', speaker: 'R. Hale', date: '2025-11-30', labels: ['advent'] },
      });

    const changes: Omit<ChangeCost, 'lines' | 'usd'>[] = [];
    let item: MediaItem | undefined;
    changes.push(
      await measure('create', 'create an item', async () => {
        item = (await create('item-1')).item;
        return undefined;
      }),
    );
    const first = item as MediaItem;
    const v1 = await layDown(await startOf(first, 'v1', 'upl_aaaaaaaaaaaaaaaaaaaaaa'));
    await switchToVersion(deps, v1);
    clock += 3_600_000;
    changes.push(
      await measure('title-speaker', 'change the title or speaker', async () => {
        await updateMediaItem(deps, TENANT, first.id, { title: 'Advent 1: Waiting', speaker: 'Ruth Hale' });
        return undefined;
      }),
      await measure('labels-date', 'change the labels or date', async () => {
        await updateMediaItem(deps, TENANT, first.id, { labels: ['advent', 'hope'], date: '2025-12-01' });
        return undefined;
      }),
    );

    // A new version: its start (the API request), then, once the publish is done, the switch and the
    // retirement of the version it replaced, after the grace period.
    const startBefore = snapshot(counts);
    const callsBefore = { ...calls };
    const v2 = await startOf(first, 'v2', 'upl_bbbbbbbbbbbbbbbbbbbbbb');
    const started = countsBetween(startBefore, counts);
    const v2Published = await layDown(v2);
    const switched = await measure('new-version', 'publish a new version', async () => {
      if ((await switchToVersion(deps, v2Published)) !== 'current')
        throw new Error('version 2 was fenced out');
      clock += settings.mediaGraceSeconds * 1000;
      return retireAll();
    });
    changes.push({
      ...switched,
      counts: addCounts(started, switched.counts),
      providerCalls: switched.providerCalls + (calls.providerCalls - callsBefore.providerCalls),
      jobsStarted: calls.jobsStarted - callsBefore.jobsStarted,
    });

    clock += 3_600_000;
    changes.push(
      await measure('delete', 'delete an item', async () => {
        await deleteMediaItem({ ...deps, cancel }, TENANT, first.id);
        return retireAll();
      }),
    );

    // Search: the media items among its hits are read once each, to show only current versions.
    const searchItem = (await create('item-2')).item;
    const searched = await layDown(await startOf(searchItem, 'v1', 'upl_cccccccccccccccccccccc'));
    await switchToVersion(deps, searched);
    changes.push(
      await measure('search-per-item', 'search: added per distinct media item among the hits', async () => {
        const result = await search(
          {
            store: setupJobs,
            // Presigning needs credentials the in-memory S3 has none of; it sends no request either.
            outputs: {
              getOutput: (key: string) => setupOutputs.getOutput(key),
              putOutput: (key: string, body: Uint8Array | string, type: string) =>
                setupOutputs.putOutput(key, body, type),
              outputUrl: async (key: string) => `https://outputs.example/${key}`,
            },
            vectors: {
              metric: 'cosine',
              query: async () => {
                const hits = await setupVectors.get(
                  Array.from({ length: SEARCH_HITS }, (_, passage) => vectorKeyOf(searched, passage)),
                );
                return hits.map((hit, rank) => ({
                  key: hit.key,
                  distance: rank / 100,
                  metadata: hit.metadata,
                }));
              },
            },
            embedQuery: async () => [1],
            media,
          },
          TENANT,
          { query: 'waiting' },
        );
        if (result.items.length === 0)
          throw new Error('the search found none of the current version’s passages');
        return undefined;
      }),
    );
    return {
      changes,
      outputsPerVersion: outputsOfVersion(v1, passages, AUDIO_SECONDS).length,
      graceSeconds: settings.mediaGraceSeconds,
    };
  } finally {
    stopIndexCount();
    await db.stop();
  }
}

function addCounts(a: Counts, b: Counts): Counts {
  const sum = emptyCounts();
  for (const c of [a, b]) {
    for (const [key, n] of Object.entries(c.requests)) sum.requests[key] = (sum.requests[key] ?? 0) + n;
    for (const key of Object.keys(sum.dynamodb) as (keyof Counts['dynamodb'])[])
      sum.dynamodb[key] += c.dynamodb[key];
    for (const key of Object.keys(sum.vectors) as (keyof Counts['vectors'])[])
      sum.vectors[key] += c.vectors[key];
  }
  return { ...sum, events: a.events + b.events };
}

const METADATA_CHANGES: readonly ChangeKind[] = ['title-speaker', 'labels-date'];

/** A metadata change that called a provider, started a job or workflow, or changed a vector's data, fails the section. */
export function assertCheapMetadataChanges(changes: readonly Omit<ChangeCost, 'lines' | 'usd'>[]): void {
  for (const change of changes.filter((c) => METADATA_CHANGES.includes(c.kind))) {
    const workflow = Object.keys(change.counts.requests).filter((key) => key.startsWith('states:'));
    const faults = [
      ...(change.providerCalls > 0 ? [`${change.providerCalls} Bedrock or Deepgram calls`] : []),
      ...(change.jobsStarted > 0 ? [`${change.jobsStarted} jobs started`] : []),
      ...(workflow.length > 0 ? [`workflow requests ${workflow.join(', ')}`] : []),
      ...(change.counts.vectors.dataChanged > 0
        ? [`${change.counts.vectors.dataChanged} vectors re-embedded`]
        : []),
    ];
    if (faults.length > 0) {
      throw new Error(`"${change.title}" must be cheap, but made ${faults.join('; ')}`);
    }
  }
}

/** The API request a change is, if it is one: POST, PATCH or DELETE, through API Gateway to the api function. */
const apiOf = (kind: ChangeKind) =>
  kind === 'search-per-item' ? { restRequests: 0, invocations: 0 } : { restRequests: 1, invocations: 1 };

export function priceChanges(
  measured: readonly Omit<ChangeCost, 'lines' | 'usd'>[],
  publish: PublishCost | undefined,
): ChangeCost[] {
  return measured.map((change) => {
    const own = priceCounts(change.counts, apiOf(change.kind));
    const lines =
      change.kind === 'new-version' && publish
        ? [...own, ...publish.lines.map((line) => ({ ...line, item: `publish: ${line.item}` }))]
        : own;
    return { ...change, lines, usd: total(lines) };
  });
}

const sumOf = (requests: Readonly<Record<string, number>>, prefix: string) =>
  Object.entries(requests)
    .filter(([key]) => key.startsWith(prefix))
    .reduce((sum, [, n]) => sum + n, 0);

const requestsText = (requests: Readonly<Record<string, number>>) =>
  Object.entries(requests)
    .map(([key, n]) => `${key} ${n}`)
    .join(', ');

export async function mediaChangesSection(current?: Partial<PublishFigures>): Promise<MediaChangesFigures> {
  print(
    `\n## What each change to a media item costs in AWS: an item whose current version is a ${AUDIO_SECONDS / 60}-minute sermon of ${PASSAGES} passages`,
  );
  const measured = await measureChanges(PASSAGES);
  assertCheapMetadataChanges(measured.changes);
  const { figures, source } = publishFigures(current);
  const publish = publishCost(figures, source, PASSAGES, AUDIO_SECONDS);
  const changes = priceChanges(measured.changes, publish);
  const dimensions = loadSettings({}).embeddingDimensions;
  print(
    `assumed: ${PASSAGES} passages of ${PASSAGE_SECONDS} s (the search section's), vectors of ${dimensions} dimensions with ~${PASSAGE_TEXT_BYTES} bytes of text; ` +
      `a version leaves ${measured.outputsPerVersion} outputs (2 renditions of 6 s segments, their playlists, chunks, transcripts, passages, embedding runs, manifests); ` +
      `the replaced version is retired ${measured.graceSeconds} s after the switch, by reconciler passes a minute apart; a search asks the index for ${SEARCH_HITS} passages`,
  );
  print(
    'counted: the media library’s functions through their real adapters (DynamoDB on dynalite, its reported units; S3, S3 Vectors, EventBridge in memory behind the SDK calls)',
  );
  print(
    '| change | DynamoDB reads / writes (read / write units) | S3 GET / PUT+LIST / DELETE | S3 Vectors Get / Put / Delete requests (vectors) | Bedrock + Deepgram calls | state transitions | Lambda invocations | EventBridge events | USD per 1,000 |',
  );
  print('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const change of changes) {
    const r = change.counts.requests;
    const d = change.counts.dynamodb;
    const v = change.counts.vectors;
    const isPublish = change.kind === 'new-version';
    const transitions = isPublish ? (publish ? String(publish.stateTransitions) : 'not measured') : '0';
    const invocations =
      apiOf(change.kind).invocations + (isPublish && publish ? publish.lambdaInvocations : 0);
    const providerCalls = isPublish
      ? `${change.providerCalls} + the publish's (${Math.ceil(AUDIO_SECONDS / loadSettings({}).transcribeChunkSeconds)} Deepgram chunks, ${PASSAGES} Titan calls)`
      : String(change.providerCalls);
    print(
      `| ${change.title} | ${d.reads} / ${d.writes} (${fmt(d.readUnits, 1)} / ${fmt(d.writeUnits + d.indexWriteUnits, 1)}) | ` +
        `${r['s3:GetObject'] ?? 0} / ${(r['s3:PutObject'] ?? 0) + (r['s3:ListObjectsV2'] ?? 0)} / ${(r['s3:DeleteObjects'] ?? 0) + (r['s3:DeleteObject'] ?? 0)} | ` +
        `${r['s3vectors:GetVectors'] ?? 0} / ${r['s3vectors:PutVectors'] ?? 0} / ${r['s3vectors:DeleteVectors'] ?? 0} (${v.read} / ${v.written} / ${v.deleted}) | ` +
        `${providerCalls} | ${transitions} | ${fmt(invocations, 1)} | ${change.counts.events} | ${fmt(change.usd * 1000, 4)} |`,
    );
  }
  for (const change of changes) {
    const passes =
      change.reconcilerPasses === undefined
        ? ''
        : `; its retirement took ${change.reconcilerPasses} reconciler passes`;
    print(`- ${change.title}: ${requestsText(change.counts.requests) || 'nothing'}${passes}`);
  }
  if (publish) {
    print(
      `a new version's publish, from the media, embedding and search sections' figures (${publish.source}): ` +
        publish.lines.map((line) => `${line.item} $${fmt(line.usd, 5)}`).join('; ') +
        `; not in it: ${publish.notIn.join('; ')}`,
    );
  } else {
    print("a new version's publish: not priced, the media, embedding or search figures are missing");
  }
  const title = changes.find((c) => c.kind === 'title-speaker');
  const labels = changes.find((c) => c.kind === 'labels-date');
  print(
    `checked: a title or speaker change and a labels or date change called no provider, started no job or workflow and re-embedded no vector; ` +
      `the labels change read ${labels ? sumOf(labels.counts.requests, 's3vectors:GetVectors') : 0} pages of 100 and wrote ${labels ? sumOf(labels.counts.requests, 's3vectors:PutVectors') : 0} of 500; ` +
      `the title change sent ${title ? sumOf(title.counts.requests, 's3vectors:') : 0} S3 Vectors requests`,
  );
  print(`${PRICES_REGION} list prices as of ${PRICES_AS_OF} (bench/prices.ts)`);
  return {
    assumptions: {
      passages: PASSAGES,
      audioSeconds: AUDIO_SECONDS,
      outputsPerVersion: measured.outputsPerVersion,
      dimensions,
      graceSeconds: measured.graceSeconds,
      searchHits: SEARCH_HITS,
    },
    changes: changes.map((change) => ({
      ...change,
      lines: change.lines.map((line) => ({
        ...line,
        quantity: round(line.quantity, 6),
        usd: round(line.usd, 8),
      })),
      usd: round(change.usd, 8),
    })),
    ...(publish ? { publish } : {}),
    prices: { region: PRICES_REGION, asOf: PRICES_AS_OF, file: 'bench/prices.ts' },
  };
}
