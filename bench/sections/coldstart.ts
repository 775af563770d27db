import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { resourceEnv } from '../../config/layout';
import { HANDLER_NODE_OPTIONS, handlerBuildOptions } from '../../lib/bundling';
import { handlerEntry } from '../../lib/handlers';
import { type BundleInput, largestInputs } from '../support/bundle-inputs';
import { fmt, median, print, round } from '../support/common';

/**
 * Cold start: each handler bundled as ProjectFunction bundles it for
 * deployment (lib/bundling.ts: the same options, the SDK left to the
 * runtime, the source map beside it), its size, what fills it most, and the
 * time to load it in a fresh Node with the functions' Node options, the
 * module-init part of a Lambda cold start.
 */

export interface HandlerFigures {
  readonly handler: string;
  readonly bundleKiB: number;
  readonly initMs: number;
  /**
   * CPU time of the same loads (median): the work itself, which a machine
   * busy with other processes stretches less than the wall time.
   */
  readonly initCpuMs: number;
  /** The inputs that put the most bytes into the bundle, largest first (esbuild's metafile). */
  readonly largest: readonly BundleInput[];
}

const ROOT = resolve(__dirname, '../..');
const RUNS = 5;
const LARGEST = 5;

export async function coldStartSection(): Promise<HandlerFigures[]> {
  print(`\n## 4. Cold start: bundle size and module init, median of ${RUNS} fresh processes each`);
  const out = join(ROOT, 'bench', '.build');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const handlers = readdirSync(join(ROOT, 'lambdas')).filter((name) => {
    try {
      return statSync(handlerEntry(name)).isFile();
    } catch {
      return false;
    }
  });
  const env = {
    // Every resource variable a deployed function may be given, as placeholders: nothing is called at init.
    ...Object.fromEntries(Object.values(resourceEnv).map((name) => [name, `https://bench.invalid/${name}`])),
    PATH: process.env.PATH ?? '',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_EC2_METADATA_DISABLED: 'true',
    POWERTOOLS_SERVICE_NAME: 'bench',
    POWERTOOLS_METRICS_NAMESPACE: 'Longhaul',
    POWERTOOLS_LOG_LEVEL: 'WARN',
    NODE_OPTIONS: HANDLER_NODE_OPTIONS,
  };
  const figures: HandlerFigures[] = [];
  try {
    for (const handler of handlers) {
      // Each in a directory of its own, as each function's asset: index.js and its index.js.map.
      const outfile = join(out, handler, 'index.js');
      const { metafile } = await build({
        ...handlerBuildOptions(handlerEntry(handler), outfile),
        metafile: true,
        logLevel: 'silent',
      });
      const output =
        metafile.outputs[Object.keys(metafile.outputs).find((path) => path.endsWith('index.js')) ?? ''];
      if (!output) throw new Error(`esbuild reported no index.js for ${handler}`);
      const times: number[] = [];
      const cpuTimes: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const script = `const c=process.cpuUsage(),t=process.hrtime.bigint();require(${JSON.stringify(outfile)});const u=process.cpuUsage(c);process.stdout.write(JSON.stringify([Number(process.hrtime.bigint()-t)/1e6,(u.user+u.system)/1e3]))`;
        const run = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, env, encoding: 'utf8' });
        if (run.status !== 0) {
          throw new Error(
            `${handler} failed to load: ${/Error: .*/.exec(run.stderr)?.[0] ?? `exit ${run.status}`}`,
          );
        }
        const [wallMs, cpuMs] = JSON.parse(run.stdout) as [number, number];
        times.push(wallMs);
        cpuTimes.push(cpuMs);
      }
      const result = {
        handler,
        bundleKiB: round(statSync(outfile).size / 1024, 1),
        initMs: Math.round(median(times)),
        initCpuMs: Math.round(median(cpuTimes)),
        largest: largestInputs(output, LARGEST),
      };
      figures.push(result);
      print(
        `measured: ${handler.padEnd(10)} bundle ${fmt(result.bundleKiB, 1).padStart(7)} KiB, init ${result.initMs} ms (CPU ${result.initCpuMs} ms; SDK loaded from node_modules)`,
      );
      print(
        `          largest: ${result.largest.map(({ input, kib }) => `${input} ${fmt(kib, 1)}`).join(', ')} KiB`,
      );
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
  return figures;
}
