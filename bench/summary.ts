import { printGoals } from './goals';
import type { PeerFigures } from './peer/bullmq';
import type { Results } from './results';
import type { DropFigures } from './sections/ambiguity';
import type { AcceptanceRun } from './sections/batch';
import type { EmbeddingFigures } from './sections/embedding';
import type { OutageRun, RateRun } from './sections/limits';
import type { MediaFigures } from './sections/media';
import type { MediaChangesFigures } from './sections/media-changes';
import type { ProviderUse } from './sections/providers';
import type { SearchFigures } from './sections/search';
import type { StartWaits } from './support/burst';
import { fmt, print } from './support/common';
import { type Bound, boundText, ratioText, type SharedStarts, waitsText } from './support/fairness';
import { slotGapsText } from './support/hand-off';

/** The bench's one table: every figure, Longhaul beside the BullMQ peer, and which side came out ahead. */

type Row = [figure: string, longhaul: string, peer: string];

const ratioOf = (starts: SharedStarts) => ratioText(starts.first, starts.second);

const ms = (p50: number, p99: number) => `${p50} / ${p99} ms`;
const outcomeText = (outcome: Record<string, number>) =>
  Object.entries(outcome)
    .map(([status, n]) => `${n} ${status}`)
    .join(', ');

/** The requests to one service, `dynamodb` or `sqs`, added up, with each operation's share. */
export function requestsOf(requests: Readonly<Record<string, number>>, service: string): string {
  const mine = Object.entries(requests).filter(([operation]) => operation.startsWith(`${service}:`));
  const total = mine.reduce((sum, [, n]) => sum + n, 0);
  return `${total} (${mine.map(([operation, n]) => `${operation.slice(service.length + 1)} ${n}`).join(', ')})`;
}

function drop(results: readonly { providerIdempotent: boolean }[] | undefined, idempotent: boolean) {
  return results?.find((r) => r.providerIdempotent === idempotent) as
    | (DropFigures | PeerFigures['acceptThenDrop'][number])
    | undefined;
}

/** The limits section's cases, Longhaul beside the peer. */
function limitsRows(r: Results): Row[] {
  const l = r.limits;
  if (!l) return [];
  const rate = `${l.rate.requestsPerMinute} a minute (burst ${l.rate.burst})`;
  const pace = (run: RateRun) =>
    `${run.rate ? fmt(run.rate.perMinute, 1) : 'no window'} / ${run.throttled} (${fmt(run.throttledPct, 1)} %)`;
  const lost = (run: { failedOrReview: number }) => String(run.failedOrReview);
  const { declared, undeclared, outage } = l;
  const full = (run: OutageRun) =>
    run.slotsFullS === undefined ? `not within ${outage.waitedS} s` : `${fmt(run.slotsFullS, 1)} s`;
  return [
    [
      `provider rate ${rate}, declared${l.declaredRateRead ? '' : ' (this build read none)'}: submissions a minute once the burst is spent / 429s (share)`,
      pace(declared.longhaul),
      pace(declared.peer),
    ],
    [
      `provider rate ${rate}, not declared: submissions a minute once the burst is spent / 429s (share)`,
      pace(undeclared.longhaul),
      pace(undeclared.peer),
    ],
    [
      'jobs failed or in review at a rate, declared / not declared',
      `${lost(declared.longhaul)} / ${lost(undeclared.longhaul)}`,
      `${lost(declared.peer)} / ${lost(undeclared.peer)}`,
    ],
    [
      `${outage.seconds} s outage in ${outage.longhaul.jobs} jobs: jobs failed or in review / charges`,
      `${lost(outage.longhaul)} / ${outage.longhaul.charges}`,
      `${lost(outage.peer)} / ${outage.peer.charges}`,
    ],
    [`from the provider's recovery to all ${l.limit} slots in use`, full(outage.longhaul), full(outage.peer)],
  ];
}

function summaryRows(r: Results): Row[] {
  const rows: Row[] = [];
  const none = '';
  const p = r.peer;
  if (r.progress || p) {
    rows.push([
      'progress writes per job, 20 s job at 10 ticks/s',
      r.progress
        ? `${fmt(r.progress.progressWritesPerJob, 1)} (${fmt(r.progress.writesPerTick, 3)}/tick)`
        : none,
      p ? `${fmt(p.progress.progressWritesPerJob, 1)} (${fmt(p.progress.writesPerTick, 3)}/tick)` : none,
    ]);
  }
  const b = r.backPressure;
  if (b || p) {
    const burst = b ?? p?.burst;
    rows.push(
      [
        `most in flight at the provider, limit ${burst?.limit}`,
        b ? String(b.maxInFlight) : none,
        p ? String(p.burst.maxInFlight) : none,
      ],
      [
        `makespan, ${burst?.jobs} x ${(burst?.jobMs ?? 0) / 1000} s jobs from ${burst?.clients} clients (ideal ${((burst?.jobs ?? 0) * (burst?.jobMs ?? 0)) / (burst?.limit ?? 1) / 1000} s)`,
        b ? `${fmt(b.makespanS, 1)} s` : none,
        p ? `${fmt(p.burst.makespanS, 1)} s` : none,
      ],
      [
        'provider utilization (busy slot time / limit x makespan)',
        b ? `${fmt(b.utilizationPct, 1)} %` : none,
        p ? `${fmt(p.burst.utilizationPct, 1)} %` : none,
      ],
      [
        'submit latency during the burst, p50 / p99',
        b ? ms(b.submitP50Ms, b.submitP99Ms) : none,
        p ? ms(p.burst.submitP50Ms, p.burst.submitP99Ms) : none,
      ],
      [
        'submit latency idle, p50 / p99',
        b ? ms(b.idleP50Ms, b.idleP99Ms) : none,
        p ? ms(p.burst.idleP50Ms, p.burst.idleP99Ms) : none,
      ],
      [
        'jobs in the dead-letter queue (peer: failed jobs)',
        b ? String(b.deadLetters) : none,
        p ? String(p.burst.failedJobs) : none,
      ],
      [
        "a freed slot's wait for its next job in the burst (provider finish to next acceptance, while jobs waited)",
        b ? slotGapsText(b.slotGap) : none,
        p ? slotGapsText(p.burst.slotGap) : none,
      ],
      [
        'CPU-seconds per job in the burst (Longhaul: the whole local stack; peer: its service and Redis; both: the simulator)',
        b?.cpuSecondsPerJob === undefined ? none : fmt(b.cpuSecondsPerJob, 3),
        p?.burst.cpuSecondsPerJob === undefined ? none : fmt(p.burst.cpuSecondsPerJob, 3),
      ],
    );
  }
  const h = r.handOff;
  if (h) {
    rows.push([
      `one hand-off at limit 1: provider finish to next acceptance; calls in it (requests / invocations / transitions); one after another`,
      `${h.gapMs} ms; ${h.calls.requests} / ${h.calls.invocations} / ${h.calls.transitions}; ${h.sequential}`,
      none,
    ]);
  }
  const two = r.providers;
  if (two) {
    const { alone, together } = two;
    const each = (run: typeof together, figure: (use: ProviderUse) => string) =>
      run.providers.map(figure).join(' / ');
    const names = (run: typeof together) => each(run, (use) => use.provider);
    const wait = (w: StartWaits) => `${w.p50Ms} / ${w.p95Ms} / ${w.maxMs} ms`;
    rows.push(
      [
        `most in flight at ${names(together)}, limits ${each(together, (use) => String(use.limit))}, ${together.images} images and ${together.transcriptions} transcriptions together`,
        each(together, (use) => String(use.maxInFlight)),
        'one queue: no per-provider limit',
      ],
      [
        `utilization of ${names(together)}, images and transcriptions together`,
        each(together, (use) => `${fmt(use.utilizationPct, 1)} %`),
        none,
      ],
      [
        `utilization of ${names(alone)}, ${alone.transcriptions} transcriptions alone`,
        each(alone, (use) => `${fmt(use.utilizationPct, 1)} %`),
        none,
      ],
      [
        `transcription start wait p50 / p95 / max, ${alone.transcriptions} alone`,
        wait(alone.transcriptionStartWait),
        none,
      ],
      [
        `transcription start wait p50 / p95 / max, beside ${together.images} images`,
        wait(together.transcriptionStartWait),
        none,
      ],
    );
  }
  rows.push(...limitsRows(r));
  const f = r.fairness;
  if (f) {
    const { flood, weights, priority } = f;
    const both = <T>(ours: T, theirs: T, figure: (run: T) => string): [string, string] => [
      figure(ours),
      figure(theirs),
    ];
    const floods = (figure: (run: typeof flood.longhaul) => string) =>
      both(flood.longhaul, flood.peer, figure);
    const trickle = `${flood.trickleJobs} jobs of tenant B, one every ${flood.trickleEveryS} s, beside A's flood of ${flood.floodJobs}`;
    const asked = Object.values(weights.asked).join(':');
    rows.push(
      [`start wait p50 / p95 / max, ${trickle}`, ...floods((run) => waitsText(run.trickleStartWait))],
      [
        `throughput A / B over the run (window ${fmt(flood.longhaul.windowS, 1)} s)`,
        ...floods(
          (run) =>
            `${fmt(run.floodPerS, 2)} / ${fmt(run.tricklePerS, 2)} jobs/s` +
            (run.floodAccepted < flood.floodJobs ? ` (only ${run.floodAccepted} of A's accepted)` : ''),
        ),
      ],
      [
        `provider utilization, flood and trickle, limit ${f.limit}`,
        ...floods((run) => `${fmt(run.utilizationPct, 1)} %`),
      ],
      [
        `starts A : B while both flood ${weights.each} jobs, weights ${asked}`,
        `${weights.set ? '' : `weights not set (${weights.refusal}); equal weights: `}${ratioOf(weights.starts)} ` +
          `(${weights.starts.first} / ${weights.starts.second}${weights.stopped ? ', stopped at the cap' : ''})`,
        'not run: no tenants or weights',
      ],
      [
        `start wait of an interactive job behind ${priority.backlog} standard jobs (standard jobs started before it)`,
        ...both(
          priority.longhaul,
          priority.peer,
          (run) =>
            `${boundText(run.startWait)} ms (${run.overtaking.startedFirst} of ${run.overtaking.waitingAhead})`,
        ),
      ],
    );
  }
  const batch = r.batch;
  if (batch) {
    const { longhaul, peer } = batch;
    const rate = (run: AcceptanceRun) => `${run.jobsPerS} jobs/s (${fmt(run.seconds, 1)} s)`;
    rows.push(
      [
        `jobs accepted per second, ${longhaul.batch.jobs} in batches of ${batch.batchSize} (peer: Queue.addBulk)`,
        rate(longhaul.batch),
        rate(peer.addBulk),
      ],
      [
        `jobs accepted per second, ${longhaul.single.jobs} one at a time from ${longhaul.single.clients} clients (peer: Queue.add)`,
        rate(longhaul.single),
        rate(peer.add),
      ],
      [
        `answer time of a ${batch.batchSize}-item batch, p50 / max (Longhaul's API timeout ${longhaul.apiTimeoutS} s; API Gateway's ${batch.awsIntegrationTimeoutS} s)`,
        ms(longhaul.batch.answerP50Ms, longhaul.batch.answerMaxMs),
        ms(peer.addBulk.answerP50Ms, peer.addBulk.answerMaxMs),
      ],
      [
        `DynamoDB / SQS requests per ${batch.batchSize}-item batch`,
        `${requestsOf(longhaul.requestsPerBatch, 'dynamodb')} / ${requestsOf(longhaul.requestsPerBatch, 'sqs')}`,
        none,
      ],
    );
  }
  if (r.media) rows.push(...mediaRows(r.media));
  if (r.embedding) rows.push(...embeddingRows(r.embedding));
  if (r.search) rows.push(...searchRows(r.search));
  if (r.mediaChanges) rows.push(...mediaChangesRows(r.mediaChanges));
  for (const idempotent of [true, false]) {
    const ours = drop(r.acceptThenDrop, idempotent);
    const theirs = drop(p?.acceptThenDrop, idempotent);
    if (!ours && !theirs) continue;
    const text = (f: typeof ours) =>
      f
        ? `${f.charges} charges, ${f.jobsChargedTwiceOrMore} jobs charged twice; ${outcomeText(f.outcome)}`
        : none;
    rows.push([
      `accept-then-drop on ${ours?.jobs ?? theirs?.jobs} jobs, provider ${idempotent ? 'deduplicates' : 'does not deduplicate'}`,
      text(ours),
      text(theirs),
    ]);
  }
  if (r.cost) {
    const runs = r.cost.runs;
    rows.push(
      [
        `DynamoDB writes / reads per job, ${runs.map((run) => `${run.jobMs / 1000} s`).join(' / ')} job (a batch's or transaction's items each one)`,
        runs.map((run) => `${fmt(run.dynamodb.writes, 1)} / ${fmt(run.dynamodb.reads, 1)}`).join('; '),
        none,
      ],
      [
        `state transitions per job, ${r.cost.runs.map((run) => `${run.jobMs / 1000} s`).join(' / ')} job`,
        r.cost.runs.map((run) => String(run.transitionsPerJob)).join(' / '),
        none,
      ],
      [
        `cost per 1,000 jobs, ${r.cost.runs.map((run) => `${run.jobMs / 1000} s`).join(' / ')} job`,
        r.cost.runs.map((run) => `$${fmt(run.cost.usdPerThousandJobs, 2)}`).join(' / '),
        none,
      ],
    );
  }
  if (r.reconcile) {
    rows.push([
      `reconciler items read per pass, ${r.reconcile.active} active + ${r.reconcile.runs.map((run) => run.finished.toLocaleString('en-US')).join(' / ')} finished`,
      r.reconcile.runs.map((run) => String(run.itemsRead)).join(' / '),
      none,
    ]);
  }
  if (r.schedule) {
    rows.push([
      `scheduled job lateness p50 / p99 / max, reconciler every ${r.schedule.runs.map((run) => `${run.reconcileIntervalMs / 1000} s`).join(' / ')}`,
      r.schedule.runs
        .map((run) => `${run.latenessP50Ms} / ${run.latenessP99Ms} / ${run.latenessMaxMs} ms`)
        .join('; '),
      none,
    ]);
  }
  if (r.coldStart && r.coldStart.length > 0) {
    const sizes = r.coldStart.map((h) => h.bundleKiB);
    const inits = r.coldStart.map((h) => h.initMs);
    const cpu = r.coldStart.map((h) => h.initCpuMs);
    rows.push([
      `handler bundle / module init (${r.coldStart.length} handlers)`,
      `${Math.round(Math.min(...sizes))}–${Math.round(Math.max(...sizes))} KiB / ${Math.min(...inits)}–${Math.max(...inits)} ms (CPU ${Math.min(...cpu)}–${Math.max(...cpu)} ms)`,
      none,
    ]);
  }
  return rows;
}

/** audio.publish on an hour of audio: compute steps, transcription by chunks, and their cost. */
export function mediaRows(m: MediaFigures): Row[] {
  const hour = `${m.audio.seconds / 60}-min ${m.audio.format}`;
  const step = (name: string, chunkSeconds?: number) =>
    m.steps.find((s) => s.step === name && s.chunkSeconds === chunkSeconds);
  const stepText = (s: MediaFigures['steps'][number] | undefined) =>
    s ? `${fmt(s.stepS, 1)} s, peak RSS ${fmt(s.peakTreeRssMiB, 0)} MiB` : 'not measured';
  const rows: Row[] = [
    [
      `audio.publish transcode, ${hour}: step time, peak RSS (process and ffmpeg)`,
      stepText(step('transcode')),
      '',
    ],
    ...m.steps
      .filter((s) => s.step === 'split')
      .map(
        (s): Row => [
          `audio.publish split into ${s.chunkSeconds} s chunks (${s.chunks}), ${hour}`,
          stepText(s),
          '',
        ],
      ),
  ];
  const t = m.transcription;
  const chunkings = t.measured
    ? `${t.runs[0]?.audioSeconds} s recording in ${t.runs.map((r) => `${r.chunkSeconds} s`).join(' / ')} chunks`
    : '';
  if (!t.measured) {
    rows.push([
      `audio.publish transcription, charges, state transitions, ${hour}`,
      `not measured: ${t.reason}`,
      '',
    ]);
  } else if (t.runs.some((r) => r.status !== 'succeeded')) {
    rows.push([
      `audio.publish whole jobs, ${chunkings}`,
      t.runs.map((r) => `${r.status}${r.error ? ` (${r.error})` : ''}`).join(' / '),
      '',
    ]);
  } else {
    const seconds = (value: number | undefined) =>
      value === undefined ? 'not in the timeline' : `${fmt(value, 1)} s`;
    rows.push(
      [
        `audio.publish transcription makespan (split done → last chunk job finished; first chunk job started → last finished), ${chunkings}`,
        t.runs.map((r) => `${seconds(r.transcribeS)} (${seconds(r.providerSpanS)})`).join(' / '),
        '',
      ],
      [
        `Deepgram charges per job / chunks, ${chunkings}`,
        t.runs.map((r) => `${r.charges} / ${r.chunks} (${r.chunksCharged} chunks charged)`).join('; '),
        '',
      ],
      [
        `state transitions per audio.publish job and its chunk jobs, ${chunkings}`,
        t.runs.map((r) => String(r.stateTransitions)).join(' / '),
        '',
      ],
    );
  }
  rows.push([
    'audio.publish compute per hour of audio, Lambda / Fargate (measured time x list price)',
    m.cost.compute.map((c) => `$${fmt(c.usdPerAudioHour, 4)}`).join(' / '),
    '',
  ]);
  return rows;
}

/** Embedding at the provider's limit, beside a BullMQ worker of the same concurrency; what a run costs. */
export function embeddingRows(e: EmbeddingFigures): Row[] {
  const { setup, longhaul, peer } = e;
  const burst = `${longhaul.passages} passages of ${setup.recordings} recordings published at once, runs of ${setup.passagesPerRun}, Bedrock limit ${setup.limit}, ${setup.callMs} ms a call`;
  return [
    [
      `passages embedded per second, ${burst}`,
      `${fmt(longhaul.passagesPerS, 2)} (${fmt(longhaul.windowS, 1)} s)`,
      `${fmt(peer.passagesPerS, 2)} (${fmt(peer.windowS, 1)} s)`,
    ],
    [
      'utilization of the Bedrock limit (calls in flight integrated / limit x first call to last answer)',
      `${fmt(longhaul.utilizationPct, 1)} %`,
      `${fmt(peer.utilizationPct, 1)} %`,
    ],
    [
      'most Bedrock calls in flight / passages billed twice',
      `${longhaul.maxInFlight} / ${longhaul.passagesBilledTwice}`,
      `${peer.maxInFlight} / ${peer.passagesBilledTwice}`,
    ],
    [
      `cost per embedding run of ${setup.passagesPerRun} passages: state transitions (own + parent's), Lambda invocations; USD per 1,000 runs (${e.notMeasured.length} items not measured)`,
      `${fmt(longhaul.perRun.runTransitions + longhaul.perRun.parentTransitions, 1)}, ${fmt(
        Object.values(longhaul.perRun.charged.invocations).reduce((sum, n) => sum + n, 0),
        1,
      )}; $${fmt(longhaul.cost.usdPerThousandRuns, 4)}`,
      '',
    ],
  ];
}

const share = (value: number) => `${fmt(value * 100, 1)} %`;

/** Search: quality beside the keyword peer, latency over the large index, cost per published hour. */
export function searchRows(s: SearchFigures): Row[] {
  const { embedder, bm25 } = s.quality;
  const quality = (q: { recallAt5: number; mrr: number }) => `${share(q.recallAt5)} / ${fmt(q.mrr, 3)}`;
  const c = s.cost.perHour;
  const l = s.latency;
  return [
    [
      `search recall@5 / MRR@10, ${s.set.queries} labelled queries over ${s.set.passages} passages of ${s.set.sermons} sermons (Longhaul: the local lexical embedder; peer: MiniSearch BM25+ on the same stems)`,
      quality(embedder),
      quality(bm25),
    ],
    [
      `search recall@5 / MRR@10, the ${s.set.byKind.hard} hard paraphrases (at most one stem shared with their passage)`,
      quality(embedder.byKind.hard),
      quality(bm25.byKind.hard),
    ],
    ...l.byIndex.map(
      (measured): Row => [
        `search latency p50 / p99, ${l.queries} queries, ${l.hours.toLocaleString('en-US')} published hours (${l.passages.toLocaleString('en-US')} passages), ${measured.index}; S3 Vectors documents ${s.aws.text}`,
        ms(measured.p50Ms, measured.p99Ms),
        '',
      ],
    ),
    [
      `search cost per published hour, embedding (Titan) and PutVectors once / storage a month; ${s.cost.assumptions.queries.toLocaleString('en-US')} searches over ${s.cost.assumptions.indexHours.toLocaleString('en-US')} h`,
      `$${fmt(c.embedTitanUsd + c.putUsd, 6)} / $${fmt(c.storageUsdPerMonth, 6)}; $${fmt(c.queries.totalUsd, 4)}`,
      '',
    ],
  ];
}

/** What each change to a media item costs: its own calls, and for a new version its publish too. */
export function mediaChangesRows(m: MediaChangesFigures): Row[] {
  const usd = (kind: string) => m.changes.find((change) => change.kind === kind)?.usd ?? 0;
  const labels = m.changes.find((change) => change.kind === 'labels-date');
  const vectorRequests = labels
    ? ['GetVectors', 'PutVectors'].map((op) => labels.counts.requests[`s3vectors:${op}`] ?? 0).join(' / ')
    : '';
  return [
    [
      `media item changes, current version ${m.assumptions.passages} passages: USD per 1,000 of create / title or speaker / labels or date / delete (its retirement in)`,
      ['create', 'title-speaker', 'labels-date', 'delete']
        .map((kind) => `$${fmt(usd(kind) * 1000, 4)}`)
        .join(' / '),
      '',
    ],
    [
      'media item labels or date change: S3 Vectors GetVectors / PutVectors requests; provider calls of any metadata change',
      `${vectorRequests}; ${m.changes
        .filter((change) => change.kind === 'title-speaker' || change.kind === 'labels-date')
        .reduce((sum, change) => sum + change.providerCalls, 0)}`,
      '',
    ],
    [
      `media item new version, USD per 1,000: publish${m.publish ? '' : ' (not priced)'} + switch + retirement of the old version`,
      `$${fmt(usd('new-version') * 1000, 4)}`,
      '',
    ],
  ];
}

/** Each figure both sides measured, with which side came out ahead. */
export function verdicts(r: Results): { peer: string[]; longhaul: string[] } {
  const peer: string[] = [];
  const longhaul: string[] = [];
  const compare = (figure: string, ours: number, theirs: number, lowerIsBetter: boolean, unit: string) => {
    if (ours === theirs) return;
    const text = `${figure}: ${ours}${unit} (Longhaul) vs ${theirs}${unit} (BullMQ)`;
    (ours < theirs === lowerIsBetter ? longhaul : peer).push(text);
  };
  const l = r.limits;
  if (l) {
    compare(
      `jobs failed or in review in a ${l.outage.seconds} s outage`,
      l.outage.longhaul.failedOrReview,
      l.outage.peer.failedOrReview,
      true,
      '',
    );
    compare(
      '429s at a provider rate not declared',
      l.undeclared.longhaul.throttled,
      l.undeclared.peer.throttled,
      true,
      '',
    );
    for (const [figure, run] of [
      ['submissions a minute at a declared provider rate', l.declared],
      ['submissions a minute at a provider rate not declared', l.undeclared],
    ] as const) {
      const [ours, theirs] = [run.longhaul.rate?.perMinute, run.peer.rate?.perMinute];
      if (ours !== undefined && theirs !== undefined) compare(figure, ours, theirs, false, '');
    }
  }
  const f = r.fairness;
  if (f) {
    // A peer figure may be only a lower bound (jobs that had not started when the run stopped):
    // it is compared only where the bound alone decides.
    const bounded = (figure: string, ours: Bound, theirs: Bound) => {
      if (ours.ms === theirs.ms && !ours.atLeast && !theirs.atLeast) return;
      const text = `${figure}: ${boundText(ours)} ms (Longhaul) vs ${boundText(theirs)} ms (BullMQ)`;
      if (ours.ms < theirs.ms && !ours.atLeast) longhaul.push(text);
      else if (theirs.ms < ours.ms && !theirs.atLeast) peer.push(text);
    };
    bounded(
      'trickling tenant B p95 start wait',
      f.flood.longhaul.trickleStartWait.p95,
      f.flood.peer.trickleStartWait.p95,
    );
    compare(
      'provider utilization, flood and trickle',
      f.flood.longhaul.utilizationPct,
      f.flood.peer.utilizationPct,
      false,
      ' %',
    );
    bounded(
      'interactive job start wait behind a backlog',
      f.priority.longhaul.startWait,
      f.priority.peer.startWait,
    );
  }
  const batch = r.batch;
  if (batch) {
    compare(
      `jobs accepted per second in batches of ${batch.batchSize}`,
      batch.longhaul.batch.jobsPerS,
      batch.peer.addBulk.jobsPerS,
      false,
      ' jobs/s',
    );
    compare(
      'jobs accepted per second one at a time',
      batch.longhaul.single.jobsPerS,
      batch.peer.add.jobsPerS,
      false,
      ' jobs/s',
    );
  }
  const embedding = r.embedding;
  if (embedding) {
    compare(
      'passages embedded per second at the Bedrock limit',
      embedding.longhaul.passagesPerS,
      embedding.peer.passagesPerS,
      false,
      '/s',
    );
    compare(
      'utilization of the Bedrock limit',
      embedding.longhaul.utilizationPct,
      embedding.peer.utilizationPct,
      false,
      ' %',
    );
  }
  const search = r.search;
  if (search) {
    // The search peer is MiniSearch, not BullMQ; higher is better for both figures.
    const { embedder, bm25 } = search.quality;
    for (const [figure, ours, theirs] of [
      ['search recall@5 on the labelled set', share(embedder.recallAt5), share(bm25.recallAt5)],
      ['search MRR@10 on the labelled set', fmt(embedder.mrr, 3), fmt(bm25.mrr, 3)],
    ] as const) {
      if (ours === theirs) continue;
      const text = `${figure}: ${ours} (the local embedder) vs ${theirs} (MiniSearch BM25+)`;
      (Number.parseFloat(ours) > Number.parseFloat(theirs) ? longhaul : peer).push(text);
    }
  }
  const p = r.peer;
  if (!p) return { peer, longhaul };
  if (r.progress) {
    compare(
      'progress writes per job',
      r.progress.progressWritesPerJob,
      p.progress.progressWritesPerJob,
      true,
      '',
    );
  }
  const b = r.backPressure;
  if (b) {
    compare('makespan of the burst', b.makespanS, p.burst.makespanS, true, ' s');
    compare('provider utilization', b.utilizationPct, p.burst.utilizationPct, false, ' %');
    compare('submit latency p50 during the burst', b.submitP50Ms, p.burst.submitP50Ms, true, ' ms');
    compare('submit latency p50 idle', b.idleP50Ms, p.burst.idleP50Ms, true, ' ms');
    if (b.slotGap && p.burst.slotGap) {
      compare("a freed slot's wait p50", b.slotGap.p50Ms, p.burst.slotGap.p50Ms, true, ' ms');
    }
    if (b.cpuSecondsPerJob !== undefined && p.burst.cpuSecondsPerJob !== undefined) {
      compare('CPU per job in the burst', b.cpuSecondsPerJob, p.burst.cpuSecondsPerJob, true, ' CPU-s');
    }
  }
  for (const idempotent of [true, false]) {
    const ours = drop(r.acceptThenDrop, idempotent);
    const theirs = drop(p.acceptThenDrop, idempotent);
    if (ours && theirs) {
      const provider = idempotent ? 'deduplicating' : 'non-deduplicating';
      compare(
        `charges for ${ours.jobs} jobs under accept-then-drop, ${provider} provider`,
        ours.charges,
        theirs.charges,
        true,
        '',
      );
    }
  }
  return { peer, longhaul };
}

export function printSummary(results: Results): void {
  const m = results.machine;
  print(`\n## Summary (${results.command}; ${m.cores} cores, ${m.cpu}, ${m.memoryGiB} GiB, Node ${m.node})`);
  print('| figure | Longhaul | BullMQ peer |');
  print('|---|---|---|');
  for (const [figure, ours, theirs] of summaryRows(results)) print(`| ${figure} | ${ours} | ${theirs} |`);
  const sections = Object.entries(results.sectionsS ?? {});
  if (sections.length > 0) {
    print(`\nSection wall times: ${sections.map(([name, s]) => `${name} ${s} s`).join(', ')}`);
  }
  const { peer, longhaul } = verdicts(results);
  if (peer.length + longhaul.length > 0) {
    print('\nWhere the peer does better:');
    for (const line of peer.length > 0 ? peer : ['nowhere in this run']) print(`- ${line}`);
    print('Where Longhaul does better:');
    for (const line of longhaul.length > 0 ? longhaul : ['nowhere in this run']) print(`- ${line}`);
  }
  printGoals(results, print);
}
