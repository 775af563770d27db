import { spawn } from 'node:child_process';
import { cpuMeter, cpuSecondsOfTree } from '../../bench/support/cpu';

/** The bench's CPU meter, on a process whose child keeps a core busy. */

it("counts a process tree's CPU, its children's included", async () => {
  // An idle parent whose child spins for about 800 ms, as the local stack's tsx runs node.
  const spin = 'const end = Date.now() + 800; while (Date.now() < end) {}';
  const parent = spawn(
    process.execPath,
    [
      '-e',
      `require('node:child_process').spawn(process.execPath, ['-e', ${JSON.stringify(spin)}]).on('exit', () => process.exit())`,
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise((resolve) => parent.on('exit', resolve));
  await new Promise((resolve) => setTimeout(resolve, 200));
  const meter = cpuMeter(parent.pid as number);
  await new Promise((resolve) => setTimeout(resolve, 400));
  const cores = meter() as number;
  await exited;

  // The child kept up to one core busy (less on a loaded machine); the parent, idle, adds little.
  expect(cores).toBeGreaterThan(0.2);
  expect(cores).toBeLessThan(1.5);
});

it('knows no tree under a process that does not exist', () => {
  expect(cpuSecondsOfTree(2 ** 22 + 7)).toBeUndefined();
});
