'use strict';
/**
 * Preloaded (NODE_OPTIONS=--require) into the local stack by bench/run.ts:
 * counts every outgoing HTTP request the handlers make, by AWS operation
 * (the X-Amz-Target header, or method and path for REST services), and
 * writes the counts to BENCH_COUNT_DIR/<pid>.json when it loads, on SIGUSR2
 * (bench/support/stack.ts asks before each reading) and at exit. A DynamoDB
 * UpdateItem whose body carries the progress condition is counted apart.
 * It changes no request; it only looks.
 */
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');

const dir = process.env.BENCH_COUNT_DIR;
if (dir) {
  const counts = {};
  const add = (key) => {
    counts[key] = (counts[key] ?? 0) + 1;
  };
  const header = (headers, name) => {
    if (!headers) return undefined;
    for (const [key, value] of Object.entries(headers)) {
      if (key.toLowerCase() === name) return String(value);
    }
    return undefined;
  };
  const original = http.request;
  http.request = function countedRequest(...args) {
    const options = typeof args[0] === 'object' && !(args[0] instanceof URL) ? args[0] : args[1];
    // The local DynamoDB's own hops to dynalite (EMULATOR_HOP_HEADER in local/emulators/dynamodb.ts) are not the stack's requests.
    if (header(options?.headers, 'x-longhaul-emulator-hop')) return original.apply(this, args);
    const target = header(options?.headers, 'x-amz-target');
    const auth = header(options?.headers, 'authorization') ?? '';
    const service = /Credential=[^/]+\/[^/]+\/[^/]+\/([^/]+)\//.exec(auth)?.[1];
    let key;
    if (target) key = `${service ?? 'aws'}:${target.split('.').pop()}`;
    else if (service) key = `${service}:${options?.method ?? 'GET'}`;
    const request = original.apply(this, args);
    if (key) {
      add(key);
      if (key === 'dynamodb:UpdateItem') {
        const end = request.end;
        request.end = function countedEnd(body, ...rest) {
          if (body && String(body).includes('progress < :progress')) add('dynamodb:UpdateItem(progress)');
          return end.call(this, body, ...rest);
        };
      }
    }
    return request;
  };
  const file = path.join(dir, `${process.pid}.json`);
  // Written whole and renamed into place, so a reader never sees half a file;
  // `flushes` tells the reader that the file is newer than its request.
  let flushes = 0;
  const flush = () => {
    try {
      flushes++;
      fs.writeFileSync(`${file}.tmp`, JSON.stringify({ flushes, counts }));
      fs.renameSync(`${file}.tmp`, file);
    } catch {
      // The directory may be gone once the bench has finished.
    }
  };
  flush();
  // On request (the bench signals every process that has a file), and at exit.
  process.on('SIGUSR2', flush);
  process.on('exit', flush);
}
