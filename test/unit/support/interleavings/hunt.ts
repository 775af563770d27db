/**
 * Runs the interleavings property under many seeds and prints one shrunk
 * counterexample per kind of breach (invariant, what broke, which actions),
 * with the seed and path that replay it. For filling in FOUND.md:
 *
 *   npx tsx test/unit/support/interleavings/hunt.ts [firstSeed] [seeds] [runsPerSeed] [kind,kind…]
 *
 * The last argument narrows the actions to some kinds (see ACTION_KINDS), to
 * reach breaches that commoner ones hide. With HUNT_WORLD=tenants it hunts in
 * the worlds of several tenants with caps and resumes (tenant-workloads.ts).
 */
import fc from 'fast-check';
import { explore, verdict } from './explore';
import { REPLAY_ACTIONS } from './found';
import { tenantsWorkload } from './tenant-workloads';
import { type Action, workload } from './workloads';

const [firstSeed = 1, seeds = 20, runs = 200] = process.argv.slice(2, 5).map(Number);
const focus = process.argv[5]?.split(',') as Action['kind'][] | undefined;

const property = fc.asyncProperty(
  (process.env.HUNT_WORLD === 'tenants' ? tenantsWorkload : workload)(REPLAY_ACTIONS, focus),
  fc.scheduler(),
  async (generated, scheduler) => {
    const broken = verdict(await explore(scheduler, generated));
    if (broken) throw new Error(broken);
  },
);

async function main() {
  const kinds = new Map<string, string>();
  for (let seed = firstSeed; seed < firstSeed + seeds; seed++) {
    const details = await fc.check(property, { seed, numRuns: runs });
    if (!details.failed || !details.counterexample) continue;
    const [generated] = details.counterexample;
    const message = String((details.errorInstance as Error).message);
    const headline = message
      .split('\n')
      .slice(0, 2)
      .join(' | ')
      .replace(/job_[a-z2-7]+/g, 'J')
      .replace(/gen_\d+/g, 'G');
    const actions = [...new Set(generated.actions.map((a) => a.action.kind))].sort().join(',');
    const kind = `${headline} :: ${actions}`;
    if (kinds.has(kind)) continue;
    kinds.set(kind, `seed ${seed} path ${details.counterexamplePath}`);
    console.log(
      `\n=== ${kind}\n    seed ${seed} path "${details.counterexamplePath}" focus ${focus ?? 'all'}`,
    );
    console.log(`    ${JSON.stringify(generated)}`);
    console.log(message.split('\n').slice(2).join('\n'));
  }
}

void main();
