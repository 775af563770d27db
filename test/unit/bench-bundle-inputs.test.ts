import { largestInputs } from '../../bench/support/bundle-inputs';

/** The cold-start section's account of what fills each handler's bundle. */

const output = (inputs: Record<string, number>) => ({
  bytes: 0,
  imports: [],
  exports: [],
  inputs: Object.fromEntries(Object.entries(inputs).map(([path, bytes]) => [path, { bytesInOutput: bytes }])),
});

const inputs = output({
  'node_modules/zod/v4/core/schemas.js': 30 * 1024,
  'node_modules/zod/v4/classic/schemas.js': 20 * 1024,
  '../main/node_modules/@aws-lambda-powertools/logger/lib/esm/Logger.js': 15 * 1024,
  '../main/node_modules/@aws-lambda-powertools/metrics/lib/esm/Metrics.js': 12 * 1024,
  'node_modules/@deepgram/sdk/node_modules/x/index.js': 1024,
  'lambdas/api/openapi.ts': 40 * 1024,
  'lambdas/api/handler.ts': 9 * 1024 + 512,
  'config/settings.ts': 512,
});

it("counts a package's files as one input and the project's files each on its own, largest first", () => {
  expect(largestInputs(inputs, 5)).toEqual([
    { input: 'zod', kib: 50 },
    { input: 'lambdas/api/openapi.ts', kib: 40 },
    { input: '@aws-lambda-powertools/logger', kib: 15 },
    { input: '@aws-lambda-powertools/metrics', kib: 12 },
    { input: 'lambdas/api/handler.ts', kib: 9.5 },
  ]);
});

it('counts a nested package with the package it is nested under', () => {
  expect(largestInputs(inputs, 10).slice(5)).toEqual([
    { input: '@deepgram/sdk', kib: 1 },
    { input: 'config/settings.ts', kib: 0.5 },
  ]);
});
