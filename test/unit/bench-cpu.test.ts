import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { cpuMeter, cpuSecondsOfTree } from '../../bench/support/cpu';

/**
 * The bench's CPU meter, on a process whose child uses a known amount of CPU,
 * as the local stack's tsx runs node. Both processes say what CPU they used
 * themselves, so the figures are checked against theirs, not against the wall
 * clock, which a loaded machine stretches.
 */

/** CPU seconds the child spends before it says so and waits. */
const BURN_S = 0.5;

/** The child burns its CPU, says how much it used, and stays until its stdin closes. */
const child = `
  const used = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1e6; };
  while (used() < ${BURN_S}) {}
  process.stdout.write('child ' + used() + '\\n');
  process.stdin.resume();
  process.stdin.on('end', () => process.exit());
`;

/** The parent idles: it passes its stdin on to the child, adds its own CPU to the child's word, and ends with it. */
const parent = `
  const { user, system } = process.cpuUsage();
  const child = require('node:child_process').spawn(process.execPath, ['-e', ${JSON.stringify(child)}], { stdio: ['pipe', 'pipe', 'inherit'] });
  process.stdin.pipe(child.stdin);
  child.stdout.on('data', (line) => {
    const now = process.cpuUsage();
    process.stdout.write(line.toString().trim() + ' parent ' + (now.user + now.system) / 1e6 + '\\n');
  });
  child.on('exit', () => process.exit());
`;

it("counts a process tree's CPU, its children's included", async () => {
  const tree = spawn(process.execPath, ['-e', parent], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => tree.on('exit', resolve));
  const meter = cpuMeter(tree.pid as number);
  let said = '';
  tree.stdout.on('data', (chunk) => {
    said += chunk.toString();
  });
  const deadline = Date.now() + 30_000;
  while (!/child \S+ parent \S+\n/.test(said)) {
    if (Date.now() > deadline) throw new Error(`the child never said what it used (it said: ${said})`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const [, childS, parentS] = /child (\S+) parent (\S+)/.exec(said) as RegExpExecArray;
  const counted = cpuSecondsOfTree(tree.pid as number) as number;
  const cores = meter() as number;
  tree.stdin.end();
  await exited;

  const own = Number(childS) + Number(parentS);
  // Both processes are counted (ticks of 10 ms round each down), and nothing twice: both idle since.
  expect(Number(childS)).toBeGreaterThanOrEqual(BURN_S);
  expect(counted).toBeGreaterThanOrEqual(own - 0.05);
  expect(counted).toBeLessThan(own + 0.3);
  // Busy for a while, never more than the machine's cores.
  expect(cores).toBeGreaterThan(0);
  expect(cores).toBeLessThanOrEqual(availableParallelism() + 0.1);
});

it('knows no tree under a process that does not exist', () => {
  expect(cpuSecondsOfTree(2 ** 22 + 7)).toBeUndefined();
});
