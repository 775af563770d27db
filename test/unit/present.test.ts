import { type Job, newJob, toResource } from '../../lambdas/domain/job';
import { presentJob, RESULT_SCHEMAS } from '../../lambdas/domain/present';
import { MemoryOutputs } from './support/memory-ports';

const finished = (type: Job['type'], result: Record<string, unknown>): Job => ({
  ...newJob(
    {
      id: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa',
      tenantId: 'acme',
      type,
      input: {},
      idempotencyKey: 'k',
      fingerprint: 'f',
    },
    new Date('2026-05-01T10:00:00.000Z'),
  ),
  status: 'succeeded',
  result,
});

describe('presentJob', () => {
  it.each([
    ['image.generate', { outputKey: 'outputs/acme/job/image.png', contentType: 'image/png' }],
    [
      'audio.transcribe',
      { transcriptKey: 'outputs/acme/job/transcript.json', language: 'en', text: 'hi', segments: 2 },
    ],
  ] as const)(
    'hands out a %s result in the shape its schema (and so the API document) gives',
    async (type, stored) => {
      const { result } = await presentJob(finished(type, stored), new MemoryOutputs());
      expect(RESULT_SCHEMAS[type].safeParse(result).success).toBe(true);
      expect(JSON.stringify(result)).not.toMatch(/Key"/);
    },
  );
});

describe('presentJob of a publish whose stream was removed', () => {
  it('shows no result, says its outputs were removed, and writes nothing', async () => {
    const prefix = 'outputs/acme/job_aaaaaaaaaaaaaaaaaaaaaaaaaa/';
    const stored = {
      durationSeconds: 60,
      transcriptKey: `${prefix}transcript.json`,
      passages: [],
      stream: {
        playlistKey: `${prefix}hls/master.m3u8`,
        renditions: [{ bitrateKbps: 64, playlistKey: `${prefix}hls/64k/playlist.m3u8` }],
      },
    };
    const outputs = new MemoryOutputs();

    const shown = await presentJob(finished('audio.publish', stored), outputs);

    expect(shown).toMatchObject({ status: 'succeeded', result: null, outputsRemoved: true });
    expect(outputs.objects.size).toBe(0);
  });
});

describe('toResource', () => {
  it('presents a job stored before jobs had a priority as standard, and a stored priority as it is', () => {
    const { priority: _priority, ...legacy } = finished('image.generate', {});
    expect(toResource(legacy).priority).toBe('standard');
    expect(toResource({ ...legacy, priority: 'batch' }).priority).toBe('batch');
  });

  it("counts a publish's attempts as its workflow's runs, its own jobs making its submissions", () => {
    const publish = finished('audio.publish', {});
    const queued = { ...publish, status: 'queued' as const, result: null };
    expect(toResource(queued).attempts).toBe(0);
    const started = { ...publish, startedAt: '2026-05-01T10:00:05.000Z' };
    expect(toResource(started).attempts).toBe(1);
    // Started again by the reconciler, then resumed by its client after it failed.
    expect(toResource({ ...started, runs: 1 }).attempts).toBe(2);
    expect(toResource({ ...started, runs: 1, resumes: 1 }).attempts).toBe(3);
    // A job that submits itself counts its submissions.
    expect(
      toResource({ ...finished('image.generate', {}), startedAt: started.startedAt, attempts: 2 }).attempts,
    ).toBe(2);
  });
});
