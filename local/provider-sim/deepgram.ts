import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type HeardAudio, hearBytes, hearUrl } from './audio';
import { DEFAULT_DEEPGRAM_API_KEY_ID, DEFAULT_DEEPGRAM_PROJECT_ID } from './defaults';
import type { Dialect, SimulatorContext } from './dialect';
import { answerAccepted, type FaultMode, jobFault } from './faults';
import { HttpError, hasApiKey, readBody, sendJson } from './http';
import type { Job, JobOutcome } from './jobs';
import {
  commentSentences,
  type HeardSentence,
  roundSeconds,
  SAMPLE_SECONDS,
  sentencesOver,
  WORD_CONFIDENCE,
} from './words';

/**
 * Deepgram's pre-recorded transcription (provider `deepgram`) under
 * `/deepgram/v1`, as its API reference and `@deepgram/sdk` use it:
 * `POST /v1/listen` with the audio (a JSON `{url}` or the bytes) and options
 * in the query. With `callback` it answers `{request_id}` at once and POSTs
 * (or PUTs, per `callback_method`) the full response to the callback later;
 * without, it holds the answer until the transcript is ready. No
 * deduplication, no cancel, no progress. The management API's request lookup
 * tells a caller that lost a callback whether the request finished.
 *
 * Callbacks authenticate as Deepgram documents: credentials embedded in the
 * callback URL come back as `Authorization: Basic`, `extra` key-value pairs
 * come back in `metadata.extra` (a `callback_secret` there is the documented
 * way to check a callback), and `dg-token` carries the API Key Identifier of
 * the key that submitted the request.
 *
 * Like Deepgram, it listens to the audio: when the body or the `url` is a
 * FLAC or WAV file whose length it can read (see ./audio), the request takes
 * `jobMs` plus that length times the dialect's `realTimeFactor`, and the
 * transcript covers the whole length (the sample transcript repeated and
 * stretched to fit), so chunks of one recording transcribed apart merge
 * into a transcript of all of it. Audio it cannot fetch or read gets the
 * 8-second sample transcript after `jobMs`, as before it listened.
 *
 * A recording whose comment tag holds words (WAV, MP3 or FLAC, as `ffmpeg
 * -metadata comment=…` writes it) says exactly those words, spread evenly
 * over its length (./words); a chunk cut by Longhaul's split step keeps its
 * recording's comment and says the words of its own stretch of it, so the
 * merged chunks read the comment back in order.
 */

export interface DeepgramOptions {
  /** @default DEFAULT_DEEPGRAM_API_KEY_ID */
  readonly apiKeyId?: string | undefined;
  /** @default DEFAULT_DEEPGRAM_PROJECT_ID */
  readonly projectId?: string | undefined;
}

/** The body a failed request's callback carries (the `fail-job` fault). */
export const SIMULATED_TRANSCRIPTION_FAILURE = {
  err_code: 'INTERNAL_SERVER_ERROR',
  err_msg: 'The simulated transcription failed while processing the audio.',
} as const;

/** The model every transcript claims, as `metadata.models` and `model_info` name it. */
export const DEEPGRAM_MODEL_UUID = '1abfe86b-e047-4eed-858a-35e5625b41ee';

const PREFIX = '/deepgram/v1';

interface Transcription {
  readonly requestId: string;
  readonly path: string;
  readonly created: string;
  readonly sha256: string;
  /** The audio's length as heard, else the sample transcript's. */
  readonly audioSeconds: number;
  /** What the audio says, timed. */
  readonly sentences: readonly HeardSentence[];
  readonly options: ListenOptions;
  readonly job: Job;
  /** The caller waiting for the answer when no callback was given. */
  held?: ServerResponse;
  completed?: string;
  code?: number;
  result?: Record<string, unknown>;
}

interface ListenOptions {
  readonly callback: URL | undefined;
  readonly callbackMethod: 'POST' | 'PUT';
  readonly language: string;
  readonly model: string;
  readonly punctuate: boolean;
  readonly paragraphs: boolean;
  readonly utterances: boolean;
  readonly detectLanguage: boolean;
  readonly extra: Readonly<Record<string, string>> | undefined;
  readonly tags: readonly string[];
}

/** Deepgram's error bodies. */
function deepgramError(status: number, code: string, message: string, headers?: Record<string, string>) {
  return new HttpError(status, { err_code: code, err_msg: message, request_id: randomUUID() }, headers);
}

export class DeepgramDialect implements Dialect {
  readonly provider = 'deepgram';
  private readonly transcriptions = new Map<string, Transcription>();
  private readonly apiKeyId: string;
  private readonly projectId: string;

  constructor(
    private readonly context: SimulatorContext,
    options: DeepgramOptions = {},
  ) {
    this.apiKeyId = options.apiKeyId ?? DEFAULT_DEEPGRAM_API_KEY_ID;
    this.projectId = options.projectId ?? DEFAULT_DEEPGRAM_PROJECT_ID;
  }

  async handle(req: IncomingMessage, res: ServerResponse, path: string, method: string): Promise<boolean> {
    if (path !== PREFIX && !path.startsWith(`${PREFIX}/`)) return false;
    if (!hasApiKey(req, 'Token', this.context.apiKey)) {
      throw deepgramError(401, 'INVALID_AUTH', 'Invalid credentials.');
    }
    const route = path.slice(PREFIX.length);
    const lookup = /^\/projects\/([^/]+)\/requests\/([^/]+)$/.exec(route);
    if (route === '/listen' && method === 'POST') {
      await this.listen(req, res);
    } else if (lookup && method === 'GET' && this.context.faults.down(this.provider)) {
      // An outage refuses the management API's lookups as it refuses transcriptions.
      throw deepgramError(
        503,
        'SERVICE_UNAVAILABLE',
        'Deepgram is temporarily unavailable (simulated outage).',
        {
          'Retry-After': '1',
        },
      );
    } else if (lookup && method === 'GET') {
      sendJson(
        res,
        200,
        this.lookup(decodeURIComponent(lookup[1] ?? ''), decodeURIComponent(lookup[2] ?? '')),
      );
    } else if (route === '/listen' || lookup) {
      throw deepgramError(405, 'METHOD_NOT_ALLOWED', `${method} is not allowed on ${route}.`);
    } else {
      throw deepgramError(404, 'NOT_FOUND', 'The requested resource could not be found.');
    }
    return true;
  }

  reset(): void {
    for (const transcription of this.transcriptions.values()) transcription.held?.destroy();
    this.transcriptions.clear();
  }

  private async listen(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const query = new URL(req.url ?? '/', 'http://simulator').searchParams;
    const options = listenOptions(query);
    const audio = await readAudio(req);

    const wait = this.context.throttle(this.provider);
    if (wait !== undefined) {
      // The body of Deepgram's errors reference for its 429.
      throw deepgramError(429, 'TOO_MANY_REQUESTS', 'Too many requests. Please try again later', {
        'Retry-After': String(wait),
      });
    }
    const fault = this.context.faults.take(this.provider);
    if (fault === 'reject') {
      throw deepgramError(
        400,
        'Bad Request',
        'Bad Request: failed to process audio: corrupt or unsupported data',
      );
    }
    if (fault === 'unavailable') {
      throw deepgramError(
        503,
        'SERVICE_UNAVAILABLE',
        'Deepgram is temporarily unavailable (simulated fault).',
        {
          'Retry-After': '1',
        },
      );
    }
    const heard = audio.url === undefined ? hearBytes(audio.bytes) : await hearUrl(audio.url);
    const transcription = this.accept(req, options, audio.bytes, heard, fault);
    answerAccepted(fault, req, () => {
      if (options.callback) sendJson(res, 200, { request_id: transcription.requestId });
      else transcription.held = res;
    });
  }

  private accept(
    req: IncomingMessage,
    options: ListenOptions,
    audio: Buffer,
    heard: HeardAudio | undefined,
    fault: FaultMode | undefined,
  ): Transcription {
    const { jobMs, progressHz, realTimeFactor } = this.context.config(this.provider);
    const requestId = randomUUID();
    const heardSeconds = heard?.durationSeconds;
    const audioSeconds = heardSeconds ?? SAMPLE_SECONDS;
    const transcription: Transcription = {
      requestId,
      path: (req.url ?? '').slice('/deepgram'.length),
      created: new Date().toISOString(),
      sha256: heard?.sha256 ?? createHash('sha256').update(audio).digest('hex'),
      audioSeconds,
      sentences: heard?.comment
        ? // A place means nothing without the length of the piece it places.
          commentSentences(heard.comment, audioSeconds, heardSeconds === undefined ? undefined : heard.place)
        : sentencesOver(audioSeconds),
      options,
      job: this.context.runner.start({
        id: requestId,
        provider: this.provider,
        idempotencyKey: null,
        jobMs: jobMs + (heardSeconds === undefined ? 0 : Math.round(heardSeconds * realTimeFactor * 1000)),
        progressHz,
        fault: jobFault(fault),
        hooks: { progress: () => {}, finished: (outcome, at) => this.finish(transcription, outcome, at) },
      }),
    };
    this.transcriptions.set(requestId, transcription);
    return transcription;
  }

  private finish(transcription: Transcription, outcome: JobOutcome, at: Date): void {
    transcription.completed = at.toISOString();
    const succeeded = outcome === 'succeeded';
    transcription.code = succeeded ? 200 : 500;
    const body = succeeded
      ? transcriptResponse(transcription)
      : { ...SIMULATED_TRANSCRIPTION_FAILURE, request_id: transcription.requestId };
    transcription.result = body;
    if (transcription.held) {
      sendJson(transcription.held, transcription.code, body, { 'dg-request-id': transcription.requestId });
      transcription.held = undefined;
      return;
    }
    const { callback, callbackMethod } = transcription.options;
    if (!callback || transcription.job.fault === 'lose-webhooks') return;
    // fetch refuses URLs with credentials; Deepgram sends them as Basic auth.
    const target = new URL(callback);
    const basic =
      target.username || target.password
        ? `Basic ${Buffer.from(`${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`).toString('base64')}`
        : undefined;
    target.username = '';
    target.password = '';
    const text = JSON.stringify(body);
    this.context.webhooks.enqueue({
      jobId: transcription.requestId,
      url: target.toString(),
      label: succeeded ? 'callback' : 'failed callback',
      final: true,
      method: callbackMethod,
      body: text,
      headers: () => ({ 'dg-token': this.apiKeyId, ...(basic ? { authorization: basic } : {}) }),
    });
  }

  /**
   * `GET /v1/projects/{project_id}/requests/{request_id}`: the request as the
   * management API lists it. `response` and `code` appear once it finished.
   */
  private lookup(projectId: string, requestId: string) {
    const transcription = this.transcriptions.get(requestId);
    if (projectId !== this.projectId || !transcription) {
      throw deepgramError(404, 'NOT_FOUND', `No request ${requestId} in project ${projectId}.`);
    }
    const { options, completed, code } = transcription;
    return {
      request: {
        request_id: transcription.requestId,
        project_uuid: this.projectId,
        created: transcription.created,
        path: transcription.path,
        api_key_id: this.apiKeyId,
        ...(completed !== undefined && code !== undefined
          ? {
              response:
                code === 200
                  ? {
                      details: {
                        duration: roundSeconds(transcription.audioSeconds),
                        total_audio: roundSeconds(transcription.audioSeconds),
                        channels: 1,
                        streams: 1,
                        models: [DEEPGRAM_MODEL_UUID],
                        method: options.callback ? 'async' : 'sync',
                        tags: options.tags,
                        features: features(options),
                        config: { language: options.language, model: options.model },
                      },
                      code,
                      completed,
                    }
                  : { ...transcription.result, code, completed },
              code,
            }
          : {}),
        deployment: 'hosted',
        ...(options.callback ? { callback: redactCredentials(options.callback) } : {}),
      },
    };
  }
}

function listenOptions(query: URLSearchParams): ListenOptions {
  const flag = (name: string) => query.get(name) === 'true';
  const callbackText = query.get('callback');
  let callback: URL | undefined;
  if (callbackText !== null) {
    try {
      callback = new URL(callbackText);
    } catch {
      callback = undefined;
    }
    if (!callback || !/^https?:$/.test(callback.protocol)) {
      throw deepgramError(
        400,
        'Bad Request',
        'Invalid callback URL: pre-recorded callbacks must be http or https.',
      );
    }
  }
  const method = (query.get('callback_method') ?? 'post').toUpperCase();
  if (method !== 'POST' && method !== 'PUT') {
    throw deepgramError(400, 'Bad Request', 'callback_method must be post or put.');
  }
  const extraPairs = query.getAll('extra').map((pair) => {
    const colon = pair.indexOf(':');
    if (colon <= 0) throw deepgramError(400, 'Bad Request', 'extra must be KEY:VALUE.');
    return [pair.slice(0, colon), pair.slice(colon + 1)] as const;
  });
  const smartFormat = flag('smart_format');
  return {
    callback,
    callbackMethod: method,
    language: query.get('language') || 'en',
    model: query.get('model') || 'base',
    punctuate: flag('punctuate') || smartFormat,
    paragraphs: flag('paragraphs') || smartFormat,
    utterances: flag('utterances'),
    detectLanguage: flag('detect_language'),
    extra: extraPairs.length > 0 ? Object.fromEntries(extraPairs) : undefined,
    tags: query.getAll('tag'),
  };
}

/** The audio as sent: its bytes, or the URL it is at (whose text stands for it until it is heard). */
async function readAudio(req: IncomingMessage): Promise<{ bytes: Buffer; url?: string }> {
  const body = await readBody(req);
  if (!(req.headers['content-type'] ?? '').includes('application/json')) {
    if (body.length === 0) throw deepgramError(400, 'Bad Request', 'Bad Request: the request body is empty.');
    return { bytes: body };
  }
  let url: unknown;
  try {
    url = (JSON.parse(body.toString('utf8')) as { url?: unknown }).url;
  } catch {
    throw deepgramError(400, 'Bad Request', 'Bad Request: the JSON body could not be parsed.');
  }
  if (typeof url !== 'string' || !URL.canParse(url)) {
    throw deepgramError(400, 'Bad Request', 'Bad Request: a JSON body must have a valid "url".');
  }
  return { bytes: Buffer.from(url), url };
}

function features(options: ListenOptions): string[] {
  return [
    ...(options.punctuate ? ['punctuate'] : []),
    ...(options.paragraphs ? ['paragraphs'] : []),
    ...(options.utterances ? ['utterances'] : []),
  ];
}

function redactCredentials(url: URL): string {
  const copy = new URL(url);
  copy.username = '';
  copy.password = '';
  return copy.toString();
}

/** The pre-recorded response body, deterministic but for ids and times. */
function transcriptResponse(transcription: Transcription): Record<string, unknown> {
  const { options, audioSeconds } = transcription;
  const sentences = transcription.sentences.map((sentence) => {
    const { words } = sentence;
    const text = options.punctuate ? sentence.text : words.map((word) => word.word).join(' ');
    return { segment: sentence, words, text };
  });
  const words = sentences.flatMap((sentence) => sentence.words);
  const transcript = sentences.map((sentence) => sentence.text).join(' ');
  const paragraphs = new Map<number, typeof sentences>();
  for (const sentence of sentences) {
    const paragraph = sentence.segment.paragraph;
    paragraphs.set(paragraph, [...(paragraphs.get(paragraph) ?? []), sentence]);
  }
  const alternative = {
    transcript,
    confidence: WORD_CONFIDENCE,
    words,
    languages: [options.language],
    ...(options.paragraphs
      ? {
          paragraphs: {
            transcript: `\n${[...paragraphs.values()]
              .map((paragraph) => paragraph.map((sentence) => sentence.text).join(' '))
              .join('\n\n')}`,
            paragraphs: [...paragraphs.values()].map((paragraph) => ({
              sentences: paragraph.map(({ segment, text }) => ({
                text,
                start: segment.start,
                end: segment.end,
              })),
              num_words: paragraph.reduce((sum, sentence) => sum + sentence.words.length, 0),
              start: paragraph[0]?.segment.start ?? 0,
              end: paragraph.at(-1)?.segment.end ?? 0,
            })),
          },
        }
      : {}),
  };
  return {
    metadata: {
      transaction_key: 'deprecated',
      request_id: transcription.requestId,
      sha256: transcription.sha256,
      created: transcription.created,
      duration: roundSeconds(audioSeconds),
      channels: 1,
      models: [DEEPGRAM_MODEL_UUID],
      model_info: {
        [DEEPGRAM_MODEL_UUID]: {
          name: `general-${options.model}`,
          version: '2025-01-01.0',
          arch: options.model,
        },
      },
      ...(options.extra ? { extra: options.extra } : {}),
      ...(options.tags.length > 0 ? { tags: options.tags } : {}),
    },
    results: {
      channels: [
        {
          ...(options.detectLanguage
            ? { detected_language: options.language, language_confidence: WORD_CONFIDENCE }
            : {}),
          alternatives: [alternative],
        },
      ],
      ...(options.utterances
        ? {
            utterances: sentences.map(({ segment, words: utteranceWords, text }, index) => ({
              start: segment.start,
              end: segment.end,
              confidence: WORD_CONFIDENCE,
              channel: 0,
              transcript: text,
              words: utteranceWords,
              id: uuidFrom(`${transcription.requestId}/${index}`),
            })),
          }
        : {}),
    },
  };
}

/** A stable UUID-shaped id derived from `seed`. */
function uuidFrom(seed: string): string {
  const hex = createHash('sha256').update(seed).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
