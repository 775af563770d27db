#!/usr/bin/env tsx
import { createInterface } from 'node:readline';
import { type Input, runCli } from './cli/main';

/** `longhaul`: the command line over the SDK (`npm run longhaul -- --help`). */

const interrupt = new AbortController();
process.once('SIGINT', () => interrupt.abort(new Error('interrupted')));

/** stdin: read to its end when piped, asked a line at a time on a terminal (prompts go to stderr). */
const stdin: Input = {
  isTTY: process.stdin.isTTY === true,
  readAll: async () => {
    let text = '';
    for await (const chunk of process.stdin) text += String(chunk);
    return text;
  },
  question: (question, options = {}) =>
    new Promise((resolve) => {
      const lines = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
      lines.question(question, (answer) => {
        lines.close();
        if (options.secret) process.stderr.write('\n');
        resolve(answer);
      });
      // The question is out; a secret's keystrokes are not echoed (a key on screen ends up in recordings).
      if (options.secret)
        (lines as unknown as { _writeToOutput: (text: string) => void })._writeToOutput = () => {};
    }),
};

runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin,
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
