/**
 * Media versions under every interleaving: new versions requested while one
 * is in progress (admitted or refused at intake, with a recording that is
 * good or not audio), each version's first `transcribe` step after its probe, its
 * paid work and its `finalize`, the reconciler's timeout to review landing
 * anywhere, and its retirement passes, with fast-check's scheduler ordering
 * every awaited port call. Invariants: no paid result deleted unless a newer
 * version proved good, and the current version always a succeeded one.
 *
 * Environment: INTERLEAVINGS_RUNS (default 150) and INTERLEAVINGS_SEED, as
 * for interleavings.test.ts.
 */
import fc from 'fast-check';
import { exploreVersions, versionsVerdict, versionsWorkload } from './support/interleavings/versions';

const RUNS = Number(process.env.INTERLEAVINGS_RUNS ?? 150);
const SEED = process.env.INTERLEAVINGS_SEED ? Number(process.env.INTERLEAVINGS_SEED) : undefined;

describe('media versions under every interleaving', () => {
  it('never deletes a paid version no newer good one overtook, and only ever names a succeeded version current', async () => {
    let refusedBesideOne = 0;
    let timedOut = 0;
    await fc.assert(
      fc.asyncProperty(versionsWorkload(), fc.scheduler(), async (workload, scheduler) => {
        const world = await exploreVersions(scheduler, workload);
        const broken = versionsVerdict(world);
        if (broken) throw new Error(broken);
        if (workload.requests.some((r) => r.refused) && workload.requests.some((r) => !r.refused))
          refusedBesideOne++;
        if ([...world.jobs.jobs.values()].some((job) => job.status === 'needs_review')) timedOut++;
      }),
      { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}) },
    );
    // The runs reached what they are for: refusals beside a version in progress, and timeouts to review.
    expect(refusedBesideOne).toBeGreaterThan(0);
    expect(timedOut).toBeGreaterThan(0);
  }, 60_000);

  it('a version in progress outlives a refused request and a newer version whose recording is not audio', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.constantFrom(false, true), async (scheduler, published) => {
        const world = await exploreVersions(scheduler, {
          published,
          requests: [
            { refused: false, recordingGood: true, after: 0 },
            { refused: true, recordingGood: true, after: 2 },
            { refused: false, recordingGood: false, after: 4 },
          ],
          retirePasses: [10, 30],
        });
        const broken = versionsVerdict(world);
        if (broken) throw new Error(broken);
        const current = world.item().current;
        expect(world.jobs.jobs.get(current?.jobId ?? '')?.idempotencyKey).toBe(`media/${world.mediaId}/v1`);
      }),
      { numRuns: Math.min(RUNS, 60), ...(SEED !== undefined ? { seed: SEED } : {}) },
    );
  }, 60_000);
});
