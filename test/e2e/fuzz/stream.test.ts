import fc from 'fast-check';
import WebSocket from 'ws';
import { pollUntil } from '../../../local/harness/local-stack';
import { headerValue, junkId, queryString, queryValue } from './arbitraries';
import { footprint, footprintChanges, leakIn } from './invariants';
import { ADMIN_KEY, check, KEY, OTHER_KEY, runOf, useFuzzStack } from './stack';

/** Fuzzing the WebSocket handshake of live progress: junk is refused without a 5xx and subscribes nobody. */

const fuzzing = useFuzzStack('stream', { fixtures: true });
const { attempt } = fuzzing;

describe('fuzzing the WebSocket handshake', () => {
  it('the WebSocket handshake refuses junk without a 5xx and subscribes nobody', async () => {
    const { fixture } = fuzzing;
    const run = runOf('WebSocket connect', 60);
    const before = await footprint(fuzzing.stack);
    const streamUrl = fuzzing.stack.endpoints.streamUrl;
    await check(
      fc.asyncProperty(
        fc.record({
          query: fc.oneof(
            queryString(
              ['jobId', 'apiKey'],
              fc.oneof(queryValue, junkId, fc.constantFrom(KEY, fixture.others)),
            ),
            fc.constantFrom(
              `?jobId=${fixture.succeeded}`,
              `?apiKey=${KEY}`,
              `?jobId=${fixture.others}&apiKey=${KEY}`,
              `?jobId=${fixture.succeeded}&apiKey=${OTHER_KEY}`,
              `?jobId=${fixture.succeeded}&apiKey=${KEY}`,
              `?apiKey=${KEY}&jobId=${fixture.succeeded}&jobId=${fixture.others}`,
              `?jobId=${fixture.succeeded}&apiKey=${ADMIN_KEY}`,
              `?jobId=${fixture.succeeded}&apiKey=${KEY}%20`,
              `?jobId=${fixture.succeeded}%00&apiKey=${KEY}`,
              `?jobId=${fixture.succeeded.toUpperCase()}&apiKey=${KEY}`,
              `?jobId=${fixture.succeeded}&apiKey=${'k'.repeat(600)}`,
              `?jobId=job_aaaaaaaaaaaaaaaaaaaaaaaaaa&apiKey=${KEY}`,
            ),
          ),
          protocol: fc.option(fc.constantFrom('chat', 'longhaul.v1', 'x'.repeat(300)), { nil: undefined }),
          origin: fc.option(headerValue, { nil: undefined }),
        }),
        async ({ query, protocol, origin }) =>
          attempt(
            () => `WebSocket handshake ${streamUrl}${query}`,
            async () => {
              const outcome = await new Promise<{ status: number; body: string }>((resolve, reject) => {
                const socket = new WebSocket(`${streamUrl}${query}`, protocol ? [protocol] : undefined, {
                  handshakeTimeout: 10_000,
                  ...(origin !== undefined ? { origin } : {}),
                });
                socket.once('open', () => {
                  socket.terminate();
                  resolve({ status: 101, body: '' });
                });
                socket.once('unexpected-response', (_request, response) => {
                  const chunks: Buffer[] = [];
                  response.on('data', (chunk: Buffer) => chunks.push(chunk));
                  response.on('end', () =>
                    resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
                  );
                });
                socket.once('error', (error) => {
                  // ws refuses some inputs itself (an invalid subprotocol) before anything is sent.
                  if (/subprotocol|Invalid URL/i.test(error.message)) resolve({ status: 0, body: '' });
                  else reject(error);
                });
              });
              const context = `\nquery: ${query}\nanswer ${outcome.status}: ${outcome.body.slice(0, 500)}`;
              if (outcome.status >= 500) throw new Error(`handshake answered ${outcome.status}${context}`);
              const leaked = leakIn(outcome.body, query);
              if (leaked) throw new Error(`internal detail ${leaked}${context}`);
              // Only the key of the job's own tenant opens it.
              // Only the job's own tenant, or the admin, watches a job; repeated parameters count by their last value.
              if (outcome.status === 101) {
                const params = new URLSearchParams(query);
                expect(params.getAll('jobId').at(-1)).toBe(fixture.succeeded);
                expect([KEY, ADMIN_KEY]).toContain(params.getAll('apiKey').at(-1));
              }
            },
          ),
      ),
      run,
    );
    // Opened connections unsubscribe on close; what is left must be what was there.
    await pollUntil(async () => footprintChanges(before, await footprint(fuzzing.stack)).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 200,
      description: 'no subscription left behind',
    });
  });
});
