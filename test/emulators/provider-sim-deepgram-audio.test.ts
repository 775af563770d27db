import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DeepgramClient } from '@deepgram/sdk';
import { FfmpegMedia } from '../../lambdas/adapters/ffmpeg-media';
import { indexPassages, SENTENCE_END } from '../../lambdas/domain/passages';
import { mergeChunkTranscripts, type TranscriptWord } from '../../lambdas/domain/transcript';
import { flacHeaderOf, generateTestAudio } from '../../local/harness/test-audio';
import { DEFAULT_DEEPGRAM_PROJECT_ID } from '../../local/provider-sim/defaults';
import { type RunningSimulator, startSimulator } from '../../local/provider-sim/simulator';
import { simulatorCall } from '../e2e/support/simulator';
import { WebhookInbox, waitFor } from './support/webhook-inbox';

/**
 * The simulated Deepgram listens to the audio it is given: a FLAC or WAV
 * file it can fetch (or is sent) makes the request last `jobMs` plus its
 * length times the real-time factor, and the transcript cover its whole
 * length, so chunks transcribed apart merge into one transcript. Audio it
 * cannot read is answered as before: the 8 s sample after `jobMs`. A
 * recording whose comment tag holds words says exactly those, and each
 * chunk of it its own share.
 */

jest.setTimeout(30_000);

const API_KEY = 'sim-api-key';
const JOB_MS = 300;
const SAMPLE = 'Welcome to the long haul. Slow jobs finish exactly once. Thank you for waiting.';
/** Eight sentences of five words: over 21 s, a word every 0.525 s and a sentence every 2.625 s. */
const SERMON =
  'Grace finds us where we are. It does not wait for us. Who among us has earned it? ' +
  'None of us, not one. So we give as we received. Freely, gladly, without counting cost. ' +
  'That is the whole story, friends. Go now in peace, amen!';
const SAID = 'Peace be with you. And also with you!';

let dir: string;
let files: Server;
let filesOrigin: string;
let simulator: RunningSimulator;
let inbox: WebhookInbox;
let deepgram: DeepgramClient;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'longhaul-sim-audio-'));
  await Promise.all([
    generateTestAudio(path.join(dir, 'first.flac'), { seconds: 20, kind: 'speechlike', sampleRate: 16_000 }),
    generateTestAudio(path.join(dir, 'second.flac'), { seconds: 13, kind: 'speechlike', sampleRate: 16_000 }),
    generateTestAudio(path.join(dir, 'short.wav'), { seconds: 3, kind: 'tone', sampleRate: 16_000 }),
    generateTestAudio(path.join(dir, 'song.mp3'), { seconds: 5, kind: 'tone' }),
    generateTestAudio(path.join(dir, 'sermon.wav'), { seconds: 21, kind: 'speechlike', comment: SERMON }),
    generateTestAudio(path.join(dir, 'said.flac'), { seconds: 6, kind: 'speechlike', comment: SAID }),
    generateTestAudio(path.join(dir, 'said.mp3'), { seconds: 5, kind: 'speechlike', comment: SAID }),
  ]);
  writeFileSync(path.join(dir, 'hour.flac'), flacHeaderOf(3600));
  // A file server standing in for the presigned URLs chunks are fetched from.
  files = createServer((req, res) => {
    let bytes: Buffer;
    try {
      bytes = readFileSync(path.join(dir, path.basename(req.url ?? '')));
    } catch {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(bytes);
  });
  files.listen(0, '127.0.0.1');
  await once(files, 'listening');
  filesOrigin = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
});

afterAll(async () => {
  files.closeAllConnections();
  await new Promise((done) => files.close(done));
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  inbox = await WebhookInbox.start();
  simulator = await startSimulator({
    jobMs: JOB_MS,
    progressHz: 20,
    idempotent: true,
    webhookSecret: 'generic-secret',
    apiKey: API_KEY,
  });
  deepgram = new DeepgramClient({ apiKey: API_KEY, baseUrl: `${simulator.url}/deepgram` });
});

afterEach(async () => {
  await Promise.all([simulator.close(), inbox.close()]);
});

const sha256Of = (name: string) =>
  createHash('sha256')
    .update(readFileSync(path.join(dir, name)))
    .digest('hex');

/** Transcribes a URL with a callback, as audio.publish asks for a chunk; the callback's body and when it came. */
async function transcribeUrl(url: string, extra: Record<string, unknown> = {}) {
  const callback = `${inbox.origin}/cb/${inbox.requests.length}-${Math.random().toString(36).slice(2)}`;
  const sentAt = Date.now();
  const accepted = (await deepgram.listen.v1.media.transcribeUrl({
    url,
    callback,
    model: 'nova-3',
    smart_format: true,
    punctuate: true,
    ...extra,
  } as never)) as { request_id: string };
  const [request] = await waitFor(
    'the callback',
    () => inbox.at(new URL(callback).pathname).length > 0 && inbox.at(new URL(callback).pathname),
    20_000,
  );
  return {
    requestId: accepted.request_id,
    body: request?.json,
    tookMs: (request?.receivedAtMs ?? 0) - sentAt,
  };
}

describe('deepgram dialect, audio it can read', () => {
  it('takes jobMs plus the audio’s length times the real-time factor, and covers the whole length', async () => {
    await simulatorCall(simulator.url)('/_sim/config', { provider: 'deepgram', realTimeFactor: 0.05 });
    const { requestId, body, tookMs } = await transcribeUrl(`${filesOrigin}/first.flac`, {
      utterances: true,
    });

    // 300 ms + 20 s x 0.05 = 1.3 s.
    expect(tookMs).toBeGreaterThanOrEqual(1300);
    expect(body.metadata).toMatchObject({
      request_id: requestId,
      duration: 20,
      sha256: sha256Of('first.flac'),
    });
    const [alternative] = body.results.channels[0].alternatives;
    // 20 s at 150 words a minute are 50 words, the sample's 14 about 3.6 times: four times, stretched by 20 / 32.
    expect(alternative.transcript).toBe([SAMPLE, SAMPLE, SAMPLE, SAMPLE].join(' '));
    expect(alternative.words).toHaveLength(56);
    expect(alternative.words[0]).toEqual({
      word: 'welcome',
      start: 0,
      end: 0.313,
      confidence: 0.99,
      punctuated_word: 'Welcome',
    });
    expect(alternative.words.at(-1)).toMatchObject({ end: 20, punctuated_word: 'waiting.' });
    const starts = alternative.words.map((word: { start: number }) => word.start);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    expect(
      alternative.paragraphs.paragraphs.map((p: { start: number; end: number }) => [p.start, p.end]),
    ).toEqual([
      [0, 5],
      [5, 10],
      [10, 15],
      [15, 20],
    ]);
    expect(body.results.utterances).toHaveLength(12);
    for (const utterance of body.results.utterances) expect(utterance.transcript).toMatch(/[.!?]$/);
    expect(body.results.utterances.at(-1)).toMatchObject({ start: 18.594, end: 20 });

    const { request } = await deepgram.manage.v1.projects.requests.get(
      DEFAULT_DEEPGRAM_PROJECT_ID,
      requestId,
    );
    expect(request?.response?.details).toMatchObject({ duration: 20, total_audio: 20 });
  });

  it('gives chunks transcribed apart transcripts that merge at their offsets into one of the whole recording', async () => {
    await simulatorCall(simulator.url)('/_sim/config', { provider: 'deepgram', realTimeFactor: 0 });
    const [first, second] = await Promise.all([
      transcribeUrl(`${filesOrigin}/first.flac`),
      transcribeUrl(`${filesOrigin}/second.flac`),
    ]);
    const wordsOf = (body: any) => body.results.channels[0].alternatives[0].words;
    const merged = mergeChunkTranscripts([
      { offsetSeconds: 20, words: wordsOf(second?.body) },
      { offsetSeconds: 0, words: wordsOf(first?.body) },
    ]);

    expect(second?.body.metadata.duration).toBe(13);
    expect(merged.words[0]?.start).toBe(0);
    expect(merged.words.at(-1)?.end).toBe(33);
    // Four samples in the first chunk, two in the second: whole sentences, none cut at the seam.
    expect(merged.text).toBe(Array.from({ length: 6 }, () => SAMPLE).join(' '));
    for (const [before, after] of merged.words.slice(1).map((word, i) => [merged.words[i], word] as const)) {
      expect(after.start).toBeGreaterThanOrEqual(before?.end ?? 0);
    }
  });

  it('answers an hour of speech as Deepgram does, every word listed twice: about 2 MB', async () => {
    await simulatorCall(simulator.url)('/_sim/config', { provider: 'deepgram', realTimeFactor: 0 });
    const { body } = await transcribeUrl(`${filesOrigin}/hour.flac`, { utterances: true });

    expect(body.metadata.duration).toBe(3600);
    const [alternative] = body.results.channels[0].alternatives;
    // 150 words a minute: 9,000 words, the sample's 14 said 643 times.
    expect(alternative.words).toHaveLength(643 * 14);
    expect(body.results.utterances.flatMap((utterance: { words: unknown[] }) => utterance.words)).toEqual(
      alternative.words,
    );
    expect(alternative.paragraphs.paragraphs).toHaveLength(643);
    const bytes = Buffer.byteLength(JSON.stringify(body));
    expect(bytes).toBeGreaterThan(1.5e6);
    expect(bytes).toBeLessThan(2.5e6);
  });

  it('hears a WAV sent as the body, and stretches the sample over audio shorter than it', async () => {
    const audio = readFileSync(path.join(dir, 'short.wav'));
    const query = new URLSearchParams({ callback: `${inbox.origin}/wav`, punctuate: 'true' });
    const response = await fetch(`${simulator.url}/deepgram/v1/listen?${query}`, {
      method: 'POST',
      headers: { authorization: `Token ${API_KEY}`, 'content-type': 'audio/wav' },
      body: audio,
    });
    expect(response.status).toBe(200);
    const [callback] = await waitFor('the callback', () => inbox.at('/wav').length > 0 && inbox.at('/wav'));

    expect(callback?.json.metadata).toMatchObject({
      duration: 3,
      sha256: createHash('sha256').update(audio).digest('hex'),
    });
    const [alternative] = callback?.json.results.channels[0].alternatives ?? [];
    expect(alternative.transcript).toBe(SAMPLE);
    expect(alternative.words.at(-1)).toMatchObject({ end: 3 });
  });
});

describe('deepgram dialect, audio it cannot read', () => {
  it.each([
    ['a format it does not read (MP3)', 'song.mp3'],
    ['a URL that answers 404', 'missing.flac'],
  ])('answers %s as before it listened: the 8 s sample after jobMs', async (_what, name) => {
    await simulatorCall(simulator.url)('/_sim/config', { provider: 'deepgram', realTimeFactor: 100 });
    const url = `${filesOrigin}/${name}`;
    const { body, tookMs } = await transcribeUrl(url);

    expect(body.metadata).toMatchObject({
      duration: 8,
      sha256: createHash('sha256').update(Buffer.from(url)).digest('hex'),
    });
    expect(body.results.channels[0].alternatives[0].transcript).toBe(SAMPLE);
    // At a factor of 100, any length heard would have taken minutes.
    expect(tookMs).toBeLessThan(5000);
  });
});

describe('deepgram dialect, a recording whose comment says its words', () => {
  const wordsOf = (body: any): TranscriptWord[] => body.results.channels[0].alternatives[0].words;

  it('hears each chunk the split step cut as its share of the comment, which the merge reads back in order', async () => {
    await simulatorCall(simulator.url)('/_sim/config', { provider: 'deepgram', realTimeFactor: 0 });
    // As audio.publish cuts it: 16 kHz FLAC chunks, here of 6 s (the last 3 s is a chunk of its own).
    const chunks = await new FfmpegMedia().splitIntoChunks(path.join(dir, 'sermon.wav'), dir, 6);
    expect(chunks.map((chunk) => chunk.offsetSeconds)).toEqual([0, 6, 12, 18]);

    const heard = await Promise.all(
      chunks.map((chunk) => transcribeUrl(`${filesOrigin}/${path.basename(chunk.path)}`)),
    );

    chunks.forEach((chunk, index) => {
      const words = wordsOf(heard[index]?.body);
      expect(words.length).toBeGreaterThan(0);
      for (const word of words) {
        expect(word.start).toBeGreaterThanOrEqual(0);
        expect(word.end).toBeLessThanOrEqual(chunk.durationSeconds);
      }
    });
    const merged = mergeChunkTranscripts(
      chunks.map((chunk, index) => ({
        offsetSeconds: chunk.offsetSeconds,
        words: wordsOf(heard[index]?.body),
      })),
    );
    expect(merged.words.map((word) => word.punctuated_word)).toEqual(SERMON.split(' '));
    expect(merged.text).toBe(SERMON);
    expect(merged.words.at(-1)?.end).toBe(21);
    // Sentences end where the comment's do, so passages can end on them.
    const passages = indexPassages(merged.words, { minSeconds: 5, maxSeconds: 12 });
    expect(passages.length).toBeGreaterThan(1);
    for (const passage of passages) expect(passage.text).toMatch(SENTENCE_END);
    expect(passages.map((passage) => passage.text).join(' ')).toBe(SERMON);
  });

  it('hears a whole FLAC as its comment over its length, in sentences', async () => {
    const { body } = await transcribeUrl(`${filesOrigin}/said.flac`, { utterances: true });

    const [alternative] = body.results.channels[0].alternatives;
    expect(alternative.transcript).toBe(SAID);
    expect(alternative.words.at(-1)).toMatchObject({ end: 6, punctuated_word: 'you!', word: 'you' });
    expect(body.results.utterances.map((utterance: { transcript: string }) => utterance.transcript)).toEqual([
      'Peace be with you.',
      'And also with you!',
    ]);
  });

  it('hears an MP3’s comment over the 8 s it assumes for audio whose length it does not read', async () => {
    const { body } = await transcribeUrl(`${filesOrigin}/said.mp3`);

    expect(body.metadata).toMatchObject({ duration: 8, sha256: sha256Of('said.mp3') });
    expect(body.results.channels[0].alternatives[0].transcript).toBe(SAID);
    expect(wordsOf(body).at(-1)?.end).toBe(8);
  });
});
