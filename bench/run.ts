import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runPeer } from './peer/bullmq';
import type { Results } from './results';
import { acceptThenDropSection } from './sections/ambiguity';
import { backPressureSection } from './sections/backpressure';
import { batchSection } from './sections/batch';
import { choiceSection } from './sections/choice';
import { coldStartSection } from './sections/coldstart';
import { costSection } from './sections/cost';
import { embeddingSection } from './sections/embedding';
import { fairnessSection } from './sections/fairness';
import { handOffSection } from './sections/handoff';
import { limitsSection } from './sections/limits';
import { mediaSection } from './sections/media';
import { mediaChangesSection } from './sections/media-changes';
import { progressSection } from './sections/progress';
import { providersSection } from './sections/providers';
import { reconcileSection } from './sections/reconcile';
import { scaleSection } from './sections/scale';
import { scheduleSection } from './sections/schedule';
import { searchSection } from './sections/search';
import { printSummary } from './summary';
import { machine, print, round } from './support/common';

/**
 * `npm run bench`: the figures behind Longhaul's guarantees, measured on the
 * local stack (the same handlers and state machine against the emulators and
 * the simulated provider), beside the same workloads on BullMQ and Redis.
 * Prints each section as it runs, then one table, and writes
 * bench/results.json. `npm run bench -- <section>...` runs only those.
 */

const SECTIONS = [
  'progress',
  'reconcile',
  'backpressure',
  'handoff',
  'coldstart',
  'cost',
  'scale',
  'drop',
  'peer',
  'providers',
  'limits',
  'fairness',
  'choice',
  'schedule',
  'batch',
  'media',
  'embedding',
  'search',
  'changes',
] as const;
type Section = (typeof SECTIONS)[number];

const RESULTS_FILE = join(__dirname, 'results.json');

function chosenSections(args: readonly string[]): Set<Section> {
  const unknown = args.filter((arg) => !(SECTIONS as readonly string[]).includes(arg));
  if (unknown.length > 0) {
    throw new Error(`unknown section ${unknown.join(', ')}; choose from ${SECTIONS.join(', ')}`);
  }
  return new Set((args.length > 0 ? args : SECTIONS) as Section[]);
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
  // Each section's wall time, so the run's length can be read section by section.
  const timed = async <T>(section: Section, run: () => Promise<T>): Promise<T> => {
    const sectionStarted = performance.now();
    try {
      return await run();
    } finally {
      const seconds = round((performance.now() - sectionStarted) / 1000, 0);
      results.sectionsS = { ...results.sectionsS, [section]: seconds };
      print(`section ${section} took ${seconds} s`);
    }
  };
  if (wanted.has('progress')) results.progress = await timed('progress', progressSection);
  if (wanted.has('reconcile')) results.reconcile = await timed('reconcile', reconcileSection);
  if (wanted.has('backpressure')) results.backPressure = await timed('backpressure', backPressureSection);
  if (wanted.has('handoff')) results.handOff = await timed('handoff', handOffSection);
  if (wanted.has('coldstart')) results.coldStart = await timed('coldstart', coldStartSection);
  if (wanted.has('cost')) {
    // A pass over 20 active jobs, from section 2 when it ran.
    const passMs = results.reconcile?.runs.at(-1)?.passMs ?? 20;
    results.cost = await timed('cost', () => costSection(passMs));
  }
  if (wanted.has('scale')) results.poolScale = await timed('scale', () => scaleSection(results));
  if (wanted.has('drop')) results.acceptThenDrop = await timed('drop', acceptThenDropSection);
  if (wanted.has('peer')) results.peer = await timed('peer', () => runPeer(print));
  if (wanted.has('providers')) results.providers = await timed('providers', providersSection);
  if (wanted.has('limits')) results.limits = await timed('limits', limitsSection);
  if (wanted.has('fairness')) results.fairness = await timed('fairness', fairnessSection);
  if (wanted.has('choice')) results.choice = await timed('choice', choiceSection);
  if (wanted.has('schedule')) results.schedule = await timed('schedule', scheduleSection);
  if (wanted.has('batch')) results.batch = await timed('batch', batchSection);
  if (wanted.has('media')) results.media = await timed('media', mediaSection);
  if (wanted.has('embedding')) results.embedding = await timed('embedding', embeddingSection);
  if (wanted.has('search')) results.search = await timed('search', searchSection);
  // A new version's publish is priced from the media, embedding and search figures: this run's, else the last run's.
  if (wanted.has('changes'))
    results.mediaChanges = await timed('changes', () => mediaChangesSection(results));
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
