import { type CreatedJob, type Job, type JobOf, Longhaul, type TranscriptResult } from '../../client';
import { jobBody, jsonResponse, scriptedFetch } from './support/scripted-fetch';
import type { Equals } from './support/type-assertions';

/**
 * createJob answers with the job type it was asked for: the compiler knows
 * a transcription's result is a transcript (checked by tsc, as the contract
 * test's type equalities are), and the answer is the job the API sent.
 */

const JOB_ID = 'job_typdtypdtypdtypdtypdtypd';

it('returns Job<T> for the type it was given, typed at compile time and read at run time', async () => {
  const transcript: TranscriptResult = {
    transcriptUrl: 'https://out.test/t.json',
    language: 'en',
    text: 'hello',
    segments: 1,
  };
  const answered = {
    ...jobBody(JOB_ID, 'succeeded', 100),
    type: 'audio.transcribe',
    input: { audioUrl: 'https://in.test/a.mp3' },
    result: transcript,
  };
  const transport = scriptedFetch([() => jsonResponse(answered, 202, { location: `/v1/jobs/${JOB_ID}` })]);
  const longhaul = new Longhaul({ baseUrl: 'https://api.test', apiKey: 'k', fetch: transport.fetch });

  const created = await longhaul.createJob(longhaul.userAction(), {
    type: 'audio.transcribe',
    input: { audioUrl: 'https://in.test/a.mp3' },
  });

  const sameCreated: Equals<typeof created, CreatedJob<'audio.transcribe'>> = true;
  const sameJob: Equals<typeof created.job, Job<'audio.transcribe'>> = true;
  const oneType: Equals<Job<'audio.transcribe'>, JobOf<'audio.transcribe'>> = true;
  const typedResult: Equals<typeof created.job.result, TranscriptResult | null> = true;
  // Without a type argument a Job is still any job, discriminated by `type`.
  const anyJob: Equals<Job, Job<'image.generate'> | Job<'audio.transcribe'> | Job<'audio.publish'>> = true;
  expect([sameCreated, sameJob, oneType, typedResult, anyJob]).toEqual([true, true, true, true, true]);

  // Read without narrowing: only a typed result has a `segments` to read.
  expect(created.job.type).toBe('audio.transcribe');
  expect(created.job.result?.segments).toBe(1);
  expect(created.job.result?.text).toBe('hello');
  expect(created.location).toBe(`/v1/jobs/${JOB_ID}`);
});
