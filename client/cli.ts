#!/usr/bin/env tsx
import { runCli } from './cli/main';

/** `longhaul`: the command line over the SDK (`npm run longhaul -- --help`). */

const interrupt = new AbortController();
process.once('SIGINT', () => interrupt.abort(new Error('interrupted')));

runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: interrupt.signal,
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`longhaul: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
