import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type PeerFigures, runPeer } from './peer/bullmq';
import { acceptThenDropSection, type DropFigures } from './sections/ambiguity';
import { type BurstFigures, backPressureSection } from './sections/backpressure';
import { coldStartSection, type HandlerFigures } from './sections/coldstart';
import { type CostFigures, costSection } from './sections/cost';
import { type ProgressFigures, progressSection } from './sections/progress';
import { type ReconcileFigures, reconcileSection } from './sections/reconcile';
import { fmt, type Machine, machine, print, round } from './support/common';

/**
 * `npm run bench`: the figures behind Longhaul's guarantees, measured on the
 * local stack (the same handlers and state machine against the emulators and
 * the simulated provider), beside the same workloads on BullMQ and Redis.
 * Prints each section as it runs, then one table, and writes
 * bench/results.json. `npm run bench -- <section>...` runs only those.
 */

const SECTIONS = ['progress', 'reconcile', 'backpressure', 'coldstart', 'cost', 'drop', 'peer'] as const;
type Section = (typeof SECTIONS)[number];

interface Results {
  command: string;
  machine: Machine;
  startedAt: string;
  durationS: number;
  progress?: ProgressFigures;
  reconcile?: ReconcileFigures;
  backPressure?: BurstFigures;
  coldStart?: HandlerFigures[];
  cost?: CostFigures;
  acceptThenDrop?: DropFigures[];
  peer?: PeerFigures;
}

const RESULTS_FILE = join(__dirname, 'results.json');

function chosenSections(args: readonly string[]): Set<Section> {
  const unknown = args.filter((arg) => !(SECTIONS as readonly string[]).includes(arg));
  if (unknown.length > 0) {
    throw new Error(`unknown section ${unknown.join(', ')}; choose from ${SECTIONS.join(', ')}`);
  }
  return new Set((args.length > 0 ? args : SECTIONS) as Section[]);
}

type Row = [figure: string, longhaul: string, peer: string];

const ms = (p50: number, p99: number) => `${p50} / ${p99} ms`;
const outcomeText = (outcome: Record<string, number>) =>
  Object.entries(outcome)
    .map(([status, n]) => `${n} ${status}`)
    .join(', ');

function drop(results: readonly { providerIdempotent: boolean }[] | undefined, idempotent: boolean) {
  return results?.find((r) => r.providerIdempotent === idempotent) as
    | (DropFigures | PeerFigures['acceptThenDrop'][number])
    | undefined;
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
    );
  }
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
    rows.push(
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
  if (r.coldStart && r.coldStart.length > 0) {
    const sizes = r.coldStart.map((h) => h.bundleKiB);
    const inits = r.coldStart.map((h) => h.initMs);
    rows.push([
      `handler bundle / module init (${r.coldStart.length} handlers)`,
      `${Math.round(Math.min(...sizes))}–${Math.round(Math.max(...sizes))} KiB / ${Math.min(...inits)}–${Math.max(...inits)} ms`,
      none,
    ]);
  }
  return rows;
}

function printSummary(results: Results): void {
  const m = results.machine;
  print(`\n## Summary (${results.command}; ${m.cores} cores, ${m.cpu}, ${m.memoryGiB} GiB, Node ${m.node})`);
  print('| figure | Longhaul | BullMQ peer |');
  print('|---|---|---|');
  for (const [figure, ours, theirs] of summaryRows(results)) print(`| ${figure} | ${ours} | ${theirs} |`);
}

async function main(): Promise<void> {
  const wanted = chosenSections(process.argv.slice(2));
  const started = performance.now();
  const results: Results = {
    command: ['npm run bench', ...(wanted.size < SECTIONS.length ? ['--', ...wanted] : [])].join(' '),
    machine: machine(),
    startedAt: new Date().toISOString(),
    durationS: 0,
  };
  const m = results.machine;
  print(`# Longhaul bench: ${m.cores} cores (${m.cpu}), ${m.memoryGiB} GiB, Node ${m.node}, ${m.os}`);
  if (wanted.has('progress')) results.progress = await progressSection();
  if (wanted.has('reconcile')) results.reconcile = await reconcileSection();
  if (wanted.has('backpressure')) results.backPressure = await backPressureSection();
  if (wanted.has('coldstart')) results.coldStart = await coldStartSection();
  if (wanted.has('cost')) {
    // A pass over 20 active jobs, from section 2 when it ran.
    const passMs = results.reconcile?.runs.at(-1)?.passMs ?? 20;
    results.cost = await costSection(passMs);
  }
  if (wanted.has('drop')) results.acceptThenDrop = await acceptThenDropSection();
  if (wanted.has('peer')) results.peer = await runPeer(print);
  results.durationS = round((performance.now() - started) / 1000, 0);
  printSummary(results);
  writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  print(`\nwrote bench/results.json; bench finished in ${results.durationS} s`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
