import fc from 'fast-check';
import { signPayload } from '../../../lambdas/shared/signature';
import {
  invalidProviderEvent,
  junkId,
  providerSignature,
  randomBytes,
  wellFormedProviderEvent,
} from './arbitraries';
import { problemAnswer } from './invariants';
import { PROVIDER_SECRET, useFuzzStack } from './stack';

/**
 * Fuzzing the provider webhook (POST /v1/provider/events): a bad signature,
 * or a bad body under a good one, is refused; a signed event that matches no
 * submission is ignored. Either way nothing changes.
 */

const fuzzing = useFuzzStack('provider-events', { fixtures: true });
const { fuzz } = fuzzing;

describe('fuzzing the provider webhook', () => {
  it('the provider webhook refuses every bad signature, and every bad body under a good one', async () => {
    const { fixture } = fuzzing;
    const now = () => Math.floor(Date.now() / 1000);
    const jobIds = () =>
      fc.oneof(
        fc.constantFrom(
          fixture.succeeded,
          fixture.canceled,
          fixture.others,
          'job_aaaaaaaaaaaaaaaaaaaaaaaaaa',
        ),
        junkId,
        fc.constant(undefined),
      );
    await fuzz(
      'provider webhook',
      fc
        .record({
          jobId: jobIds(),
          body: fc.oneof(
            { weight: 4, arbitrary: invalidProviderEvent },
            { weight: 1, arbitrary: randomBytes.map((b) => b.toString('latin1')) },
          ),
        })
        .chain(({ jobId, body }) =>
          fc.record({
            jobId: fc.constant(jobId),
            body: fc.constant(body),
            signature: providerSignature(body),
            duplicate: fc.boolean(),
          }),
        ),
      ({ jobId, body, signature: sig, duplicate }) => {
        const headers: [string, string][] = [['Content-Type', 'application/json']];
        if (sig.kind !== 'missing') headers.push(['Provider-Signature', sig.header]);
        // A second, wrong signature line: which one the server reads must not open a door.
        if (duplicate && sig.kind !== 'missing')
          headers.push(['Provider-Signature', signPayload('not-the-secret-at-all', body, now())]);
        return {
          method: 'POST',
          path: `/v1/provider/events${jobId === undefined ? '' : `?jobId=${jobId}`}`,
          headers,
          body: Buffer.from(body, 'utf8'),
        };
      },
      {
        numRuns: 150,
        perRun: true,
        expect: ({ signature: sig, duplicate }, res, code) => {
          if (sig.kind !== 'valid' || duplicate)
            expect([res.status, code]).toEqual(problemAnswer('unauthorized'));
          else expect([400, 401, 413]).toContain(res.status);
        },
      },
    );
  });

  it('the provider webhook ignores signed events that match no submission: unknown jobs, finished jobs', async () => {
    const { fixture } = fuzzing;
    const now = () => Math.floor(Date.now() / 1000);
    await fuzz(
      'provider webhook stray events',
      fc.record({
        // Random provider ids never match the fixture jobs' own generations, and the failed one never had any.
        jobId: fc.oneof(
          fc
            .stringMatching(/^[a-z2-7]{26}$/)
            .map((suffix) => `job_${suffix}`)
            .filter((id) => !Object.values(fixture).includes(id)),
          fc.constantFrom(fixture.succeeded, fixture.failed, fixture.canceled, fixture.others),
        ),
        event: wellFormedProviderEvent,
      }),
      ({ jobId, event }) => {
        const body = JSON.stringify(event);
        return {
          method: 'POST',
          path: `/v1/provider/events?jobId=${jobId}`,
          headers: [
            ['Content-Type', 'application/json'],
            ['Provider-Signature', signPayload(PROVIDER_SECRET, body, now())],
          ],
          body: Buffer.from(body, 'utf8'),
        };
      },
      { numRuns: 60, perRun: true, expect: (_value, res) => expect(res.status).toBe(204) },
    );
  });
});
