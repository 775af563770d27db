/**
 * Four projects: fast unit tests, CDK construct tests, tests of the local stack's emulators and
 * provider simulators themselves, and end-to-end tests of the product over the local stack.
 */
const swc = [
  '@swc/jest',
  {
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  },
];

/** A hook that stops a local stack may wait for the stack's own shutdown deadline (8 s) and then the
 * harness's (10 s): jest's default of 5 s would fail a suite whose tests all passed. */
const stopsLocalStacks = { testTimeout: 30_000 };

const common = {
  testEnvironment: 'node',
  // canonicalize and stemmer ship ES modules only; jest runs CommonJS, so they are transformed like our own code.
  transform: { '^.+\\.(t|j)sx?$': swc },
  transformIgnorePatterns: ['/node_modules/(?!(canonicalize|stemmer)/)'],
  // A dynamic import names the file it loads as Node resolves it, `./x.js` for x.ts (TypeScript's
  // nodenext resolution requires so); jest resolves TypeScript sources by their name alone.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
};

module.exports = {
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  // Most of the end-to-end time is spent waiting on timers of the local stacks, not computing: on two
  // cores two workers left a third of the CPU idle, and a third worker puts it to use.
  maxWorkers: 3,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...common, displayName: 'construct', testMatch: ['<rootDir>/test/construct/**/*.test.ts'] },
    {
      ...common,
      ...stopsLocalStacks,
      displayName: 'emulators',
      testMatch: ['<rootDir>/test/emulators/**/*.test.ts'],
    },
    { ...common, ...stopsLocalStacks, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
  ],
};
