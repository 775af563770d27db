import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { resourceEnv } from '../../config/layout';
import { fmt, median, print, round } from '../support/common';

/**
 * Cold start: each handler bundled as lib/constructs/project-function.ts
 * bundles it (the SDK left to the runtime), its size, and the time to load
 * it in a fresh Node process, the module-init part of a Lambda cold start.
 */

export interface HandlerFigures {
  readonly handler: string;
  readonly bundleKiB: number;
  readonly initMs: number;
}

const ROOT = resolve(__dirname, '../..');
const RUNS = 5;

export async function coldStartSection(): Promise<HandlerFigures[]> {
  print(`\n## 4. Cold start: bundle size and module init, median of ${RUNS} fresh processes each`);
  const out = join(ROOT, 'bench', '.build');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const handlers = readdirSync(join(ROOT, 'lambdas')).filter((name) => {
    try {
      return statSync(join(ROOT, 'lambdas', name, 'handler.ts')).isFile();
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
  };
  const figures: HandlerFigures[] = [];
  try {
    for (const handler of handlers) {
      const outfile = join(out, `${handler}.js`);
      await build({
        entryPoints: [join(ROOT, 'lambdas', handler, 'handler.ts')],
        outfile,
        bundle: true,
        platform: 'node',
        target: 'node24',
        format: 'cjs',
        minify: true,
        sourcemap: false,
        external: ['@aws-sdk/*'],
        logLevel: 'silent',
      });
      const times: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const script = `const t=process.hrtime.bigint();require(${JSON.stringify(outfile)});process.stdout.write(String(Number(process.hrtime.bigint()-t)/1e6))`;
        const run = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, env, encoding: 'utf8' });
        if (run.status !== 0) {
          throw new Error(
            `${handler} failed to load: ${/Error: .*/.exec(run.stderr)?.[0] ?? `exit ${run.status}`}`,
          );
        }
        times.push(Number(run.stdout));
      }
      const result = {
        handler,
        bundleKiB: round(statSync(outfile).size / 1024, 1),
        initMs: Math.round(median(times)),
      };
      figures.push(result);
      print(
        `measured: ${handler.padEnd(10)} bundle ${fmt(result.bundleKiB, 1).padStart(7)} KiB, init ${result.initMs} ms (SDK loaded from node_modules)`,
      );
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
  return figures;
}
