'use strict';
/**
 * Preloaded (NODE_OPTIONS=--require) into the local stack by bench/run.ts:
 * counts every outgoing HTTP request the handlers make, by AWS operation
 * (the X-Amz-Target header, or method and path for REST services), and
 * writes the counts to BENCH_COUNT_DIR/<pid>.json when it loads, on SIGUSR2
 * (bench/support/stack.ts asks before each reading) and at exit. A DynamoDB
 * UpdateItem whose body carries the progress condition is counted apart.
 *
 * DynamoDB is also counted as AWS bills it (./dynamodb-units.cjs): the reads
 * and writes each request performs (a batch's or a transaction's items each
 * count), the read and write units the emulator reports, for which every
 * request asks it (`ReturnConsumedCapacity: INDEXES`; nothing else in a
 * request or its answer changes, and the handlers read no such field), and
 * the global secondary index writes, which the emulator does not report:
 * those are worked out from each item before and after a write, as the
 * emulator hands both to its own index update.
 *
 * With BENCH_REQUEST_LOG=1 it also keeps a log of every counted request and
 * every function invocation, each with when it started and ended and which
 * invocation a request was made in, for the measurement of one hand-off; a
 * DynamoDB request's entry carries its reads, writes and units, and a queue's
 * invocation names the jobs of its messages, so calls can be charged to jobs.
 */
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');

/** What an invocation was for, in a few words: a workflow step and its job, a route, a batch of messages. */
function eventLabel(event) {
  if (!event || typeof event !== 'object') return '';
  if (typeof event.step === 'string') return `${event.step} ${event.jobId ?? ''}`.trim();
  if (typeof event.httpMethod === 'string') return `${event.httpMethod} ${event.path ?? ''}`;
  if (Array.isArray(event.Records)) {
    // The jobs the messages are for, so a queue's invocation can be charged to the jobs it handled.
    const jobs = event.Records.flatMap((record) => {
      try {
        const id = JSON.parse(record.body ?? '').jobId;
        return typeof id === 'string' ? [id] : [];
      } catch {
        return [];
      }
    });
    return `${event.Records.length} message(s)${jobs.length > 0 ? ` for ${jobs.join(' ')}` : ''}`;
  }
  return '';
}

const dir = process.env.BENCH_COUNT_DIR;
if (dir) {
  const units = require('./dynamodb-units.cjs');
  const counts = {};
  const capacity = {};
  const logging = process.env.BENCH_REQUEST_LOG === '1';
  const log = [];
  const now = () => performance.timeOrigin + performance.now();
  const add = (key) => {
    counts[key] = (counts[key] ?? 0) + 1;
  };
  const addCapacity = (key, n) => {
    if (n) capacity[key] = (capacity[key] ?? 0) + n;
  };
  const header = (headers, name) => {
    if (!headers) return undefined;
    for (const [key, value] of Object.entries(headers)) {
      if (key.toLowerCase() === name) return String(value);
    }
    return undefined;
  };
  /** The invoke store (local/lambda-service.ts installs the local stack's), which knows the invocation code runs in. */
  const invokeStore = () => globalThis.awslambda?.InvokeStore;
  const invocationIds = new WeakMap();

  /** Reads the request's body and its answer, asking for the units consumed where the request did not. */
  const countDynamoDb = (request, operation, entry) => {
    const end = request.end;
    request.end = function countedEnd(body, ...rest) {
      let parsed;
      try {
        parsed = body === undefined ? {} : JSON.parse(String(body));
      } catch {
        return end.call(this, body, ...rest);
      }
      if (operation === 'UpdateItem' && String(body).includes('progress < :progress')) {
        add('dynamodb:UpdateItem(progress)');
      }
      // Requests naming a provider's slot pool item, the one hot item of a provider (bench/sections/scale.ts).
      const keys = [parsed.Key, ...(parsed.TransactItems ?? []).map((item) => Object.values(item)[0]?.Key)];
      if (keys.some((key) => String(key?.pk?.S ?? '').startsWith('SLOTS'))) add(`pool:${operation}`);
      const items = units.requestItems(operation, parsed);
      addCapacity('reads', items.reads);
      addCapacity('writes', items.writes);
      if (entry) {
        entry.reads = items.reads;
        entry.writes = items.writes;
      }
      let sent = body;
      if (parsed.ReturnConsumedCapacity === undefined && !this.headersSent) {
        sent = JSON.stringify({ ...parsed, ReturnConsumedCapacity: 'INDEXES' });
        this.setHeader('content-length', Buffer.byteLength(sent));
      }
      this.once('response', (response) => {
        const chunks = [];
        const push = response.push;
        response.push = function tappedPush(chunk, ...more) {
          if (chunk === null) {
            if (entry) entry.end = now();
            settle(Buffer.concat(chunks));
          } else {
            chunks.push(Buffer.from(chunk));
          }
          return push.call(this, chunk, ...more);
        };
        const settle = (raw) => {
          let answer;
          try {
            answer = JSON.parse(raw.toString('utf8'));
          } catch {
            answer = undefined;
          }
          const used = units.requestUnits(operation, parsed, response.statusCode, answer);
          addCapacity('read-units', used.read);
          addCapacity('write-units', used.write);
          if (entry) {
            entry.readUnits = used.read;
            entry.writeUnits = used.write;
          }
          if (used.estimated) addCapacity('estimated-requests', 1);
        };
      });
      return end.call(this, sent, ...rest);
    };
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
    const store = invokeStore();
    const invocation = key && store?.hasContext?.() ? store.getContext() : undefined;
    const request = original.apply(this, args);
    if (!key) return request;
    add(key);
    const entry = logging
      ? { kind: 'request', name: key, start: now(), invocation: invocationIds.get(invocation) }
      : undefined;
    if (entry) {
      log.push(entry);
      request.once('close', () => {
        entry.end ??= now();
      });
    }
    if (key.startsWith('dynamodb:')) countDynamoDb(request, key.slice('dynamodb:'.length), entry);
    return request;
  };

  const countIndexWrites = (db) => {
    const updateIndexes = db.updateIndexes;
    // The tables' own dynalite is the first to write; a copy that replays its writes later (the
    // emulator's index lag) would count each of them again.
    let tables;
    db.updateIndexes = function countedUpdateIndexes(store, table, before, after, ...rest) {
      tables ??= store;
      if (store === tables) {
        try {
          const tableKeys = table.KeySchema.map((keyPart) => keyPart.AttributeName);
          for (const index of table.GlobalSecondaryIndexes ?? []) {
            const n = units.indexWriteUnits(index, tableKeys, before, after);
            addCapacity('index-write-units', n);
            addCapacity(`index-write-units:${table.TableName}/${index.IndexName}`, n);
          }
        } catch {
          // Counting never stands in the way of a write.
        }
      }
      return updateIndexes.call(this, store, table, before, after, ...rest);
    };
  };

  // dynalite reports only the table's units of a write; each of its writes goes through its index update
  // with the item before and after, which is all the index rules need. Hooked once dynalite is loaded.
  const Module = require('node:module');
  let dynaliteDb;
  try {
    dynaliteDb = require.resolve('dynalite/db', { paths: [__dirname] });
  } catch {
    dynaliteDb = undefined;
  }
  if (dynaliteDb) {
    // Left in place once dynalite is hooked (a loader installed after it may call it), doing nothing more.
    let hooked = false;
    const load = Module._load;
    Module._load = function loadWatchingDynalite(...args) {
      const loaded = load.apply(this, args);
      const db = hooked ? undefined : require.cache[dynaliteDb]?.exports;
      if (db && typeof db.updateIndexes === 'function') {
        hooked = true;
        countIndexWrites(db);
      }
      return loaded;
    };
  }

  if (logging) {
    // Calls made with fetch (the simulator's webhooks, a provider adapter's calls) do not go through
    // http.request; Node's fetch reports each on its diagnostics channels.
    const channels = require('node:diagnostics_channel');
    const fetched = new WeakMap();
    channels.subscribe('undici:request:create', ({ request }) => {
      const store = invokeStore();
      const invocation = store?.hasContext?.() ? store.getContext() : undefined;
      const entry = {
        kind: 'request',
        name: `http:${request.method} ${String(request.path).replace(/\?.*$/, '')}`,
        start: now(),
        invocation: invocationIds.get(invocation),
      };
      fetched.set(request, entry);
      log.push(entry);
    });
    for (const name of ['undici:request:trailers', 'undici:request:error']) {
      channels.subscribe(name, ({ request }) => {
        const entry = fetched.get(request);
        if (entry) entry.end ??= now();
      });
    }
    // Every local invocation runs its handler inside the stack's invocation store (local/lambda.ts):
    // a store with the function and its event. Its start and end are the invocation's.
    const { AsyncLocalStorage } = require('node:async_hooks');
    const run = AsyncLocalStorage.prototype.run;
    let invocations = 0;
    AsyncLocalStorage.prototype.run = function loggedRun(store, callback, ...rest) {
      if (
        !store ||
        typeof store !== 'object' ||
        typeof store.fn?.service !== 'string' ||
        !('event' in store)
      ) {
        return run.call(this, store, callback, ...rest);
      }
      const entry = {
        kind: 'invocation',
        name: store.fn.service,
        detail: eventLabel(store.event),
        start: now(),
        id: ++invocations,
      };
      invocationIds.set(store, entry.id);
      log.push(entry);
      const finished = () => {
        entry.end = now();
      };
      const result = run.call(this, store, callback, ...rest);
      if (result && typeof result.then === 'function') result.then(finished, finished);
      else finished();
      return result;
    };
  }

  const file = path.join(dir, `${process.pid}.json`);
  // Written whole and renamed into place, so a reader never sees half a file;
  // `flushes` tells the reader that the file is newer than its request.
  let flushes = 0;
  const flush = () => {
    try {
      flushes++;
      fs.writeFileSync(
        `${file}.tmp`,
        JSON.stringify({ flushes, counts, capacity, ...(logging ? { log } : {}) }),
      );
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
