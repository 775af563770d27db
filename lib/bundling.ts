import { Runtime } from 'aws-cdk-lib/aws-lambda';
import { type BundlingOptions, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BuildOptions } from 'esbuild';
import { REPO_ROOT } from './handlers';

/**
 * How each handler packaged as a zip is built and started, in one place:
 * ProjectFunction hands these to NodejsFunction, and the bench's cold-start
 * section (bench/sections/coldstart.ts) bundles and loads every handler with
 * the same, so the sizes and init times it reports are those of what deploys.
 */

/** The Lambda runtime; esbuild targets its Node.js version. */
export const HANDLER_RUNTIME = Runtime.NODEJS_24_X;

export const HANDLER_BUNDLING = {
  minify: true,
  sourceMap: true,
  // Stack traces need the mappings, not a second copy of the sources.
  sourcesContent: false,
  // CommonJS rather than ESM, measured: esbuild tree-shakes the ES module builds of the
  // dependencies whatever the output format (it picks them by their `import` condition, so
  // `mainFields: ['module', 'main']` changed nothing either), every bundle came out within
  // 0.5 KiB of its ESM twin and loaded in the same CPU time, and ESM would need a
  // createRequire banner for the CommonJS dependencies that require Node's built-ins.
  format: OutputFormat.CJS,
  // The runtime ships the AWS SDK v3.
  externalModules: ['@aws-sdk/*'],
} as const satisfies BundlingOptions;

/** Node's options in every function: stack traces in the logs point into the sources. */
export const HANDLER_NODE_OPTIONS = '--enable-source-maps';

/**
 * The esbuild options NodejsFunction builds `entry` with under
 * HANDLER_BUNDLING (aws-lambda-nodejs: `--bundle`, `--platform=node`, the
 * target from the runtime, run from the project root), writing `outfile` and,
 * beside it, its source map.
 */
export function handlerBuildOptions(entry: string, outfile: string): BuildOptions {
  const nodeVersion = /^nodejs(\d+)/.exec(HANDLER_RUNTIME.name)?.[1];
  if (!nodeVersion) throw new Error(`${HANDLER_RUNTIME.name} is not a Node.js runtime`);
  return {
    absWorkingDir: REPO_ROOT,
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    target: `node${nodeVersion}`,
    format: HANDLER_BUNDLING.format,
    minify: HANDLER_BUNDLING.minify,
    sourcemap: HANDLER_BUNDLING.sourceMap,
    sourcesContent: HANDLER_BUNDLING.sourcesContent,
    external: [...HANDLER_BUNDLING.externalModules],
  };
}
