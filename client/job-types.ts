/**
 * Generated from the OpenAPI document (lambdas/api/openapi.ts, `x-job-types`)
 * by `npx tsx client/scripts/job-types.ts`. Do not edit by hand. The SDK
 * ships alone, so it carries this copy of the server's facts;
 * test/unit/client-contract.test.ts fails when it is stale.
 */
import type { JobTypeInput } from './job-type-input';

export const JOB_TYPES = ['image.generate', 'audio.transcribe', 'audio.publish'] as const;
export type JobType = (typeof JOB_TYPES)[number];

export const JOB_STATUSES = [
  'scheduled',
  'queued',
  'running',
  'succeeded',
  'failed',
  'canceled',
  'needs_review',
] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const JOB_PRIORITIES = ['interactive', 'standard', 'batch'] as const;
export type JobPriority = (typeof JOB_PRIORITIES)[number];
/** The priority of a job submitted without one. */
export const DEFAULT_PRIORITY: JobPriority = 'standard';

/** An image generated from a text prompt, optionally from a source image. */
export type ImageGenerateInput = {
  readonly prompt: string;
  readonly width?: number;
  readonly height?: number;
  readonly sourceImageRef?: string;
};

/** Result of an image.generate job. */
export type ImageResult = {
  /** Presigned GET URL of the image. */
  readonly outputUrl: string;
  readonly contentType: string;
};

/** A timed transcript of a recording. Exactly one of audioUrl or audioRef. */
export type AudioTranscribeInput = {
  /** An https URL the provider can fetch. */
  readonly audioUrl?: string;
  readonly audioRef?: string;
  readonly language?: string;
};

/** Result of an audio.transcribe job. */
export type TranscriptResult = {
  /** Presigned GET URL of the whole transcript (JSON, with segments). */
  readonly transcriptUrl: string;
  readonly language: string;
  /** The first 500 characters of the transcript. */
  readonly text: string;
  /** Number of segments in the whole transcript. */
  readonly segments: number;
};

/** A recording published as an HLS stream, with a timed transcript in passages. Exactly one of audioUrl or audioRef. */
export type AudioPublishInput = {
  /** An https URL the provider can fetch. */
  readonly audioUrl?: string;
  readonly audioRef?: string;
  readonly language?: string;
  /** What search shows of the recording. */
  readonly title?: string;
  /** When it was preached or recorded; search filters by it. Default: the day it is published. */
  readonly date?: string;
  /** The recording's own labels (a series, a speaker, a place); search filters by them. */
  readonly labels?: readonly string[];
};

/** Result of an audio.publish job. */
export type AudioPublishResult = {
  /** Length of the recording, as probed. */
  readonly durationSeconds: number;
  /** Presigned URL of the HLS master playlist; every playlist and segment it leads to is presigned too, so it plays without extra headers until the URLs expire. */
  readonly playlistUrl: string;
  /** Presigned GET URL of the whole transcript (JSON, with word times). */
  readonly transcriptUrl: string;
  /** The transcript in passages of about 30 to 60 s, when they are small enough to keep on the job. */
  readonly passages?: readonly {
    /** Seconds from the start of the recording. */
    readonly start: number;
    readonly end: number;
    readonly text: string;
  }[];
  /** Presigned GET URL of the passages when they are not on the job. */
  readonly passagesUrl?: string;
  /** Whether its passages are in the search index (POST /v1/search finds them). */
  readonly searchable?: boolean;
  /** The AAC renditions, lowest bit rate first. */
  readonly renditions: readonly {
    readonly bitrateKbps: number;
    /** Presigned URL of the rendition's media playlist. */
    readonly playlistUrl: string;
  }[];
};

/** Each job type's input and result. */
export interface JobTypeSchemas {
  readonly 'image.generate': { readonly input: ImageGenerateInput; readonly result: ImageResult };
  readonly 'audio.transcribe': { readonly input: AudioTranscribeInput; readonly result: TranscriptResult };
  readonly 'audio.publish': { readonly input: AudioPublishInput; readonly result: AudioPublishResult };
}

export type { InputField, JobTypeInput } from './job-type-input';

/** Each job type's input fields, and the field a file fills: the CLI's flags and help come from here. */
export const JOB_TYPE_INPUTS = {
  'image.generate': {
    description: 'An image generated from a text prompt, optionally from a source image.',
    fields: [
      { name: 'prompt', flag: 'prompt', type: 'string', required: true },
      { name: 'width', flag: 'width', type: 'integer', required: false },
      { name: 'height', flag: 'height', type: 'integer', required: false },
      { name: 'sourceImageRef', flag: 'source-image-ref', type: 'string', required: false },
    ],
    fileField: 'sourceImageRef',
  },
  'audio.transcribe': {
    description: 'A timed transcript of a recording. Exactly one of audioUrl or audioRef.',
    fields: [
      {
        name: 'audioUrl',
        flag: 'audio-url',
        type: 'string',
        required: false,
        description: 'An https URL the provider can fetch.',
      },
      { name: 'audioRef', flag: 'audio-ref', type: 'string', required: false },
      { name: 'language', flag: 'language', type: 'string', required: false },
    ],
    fileField: 'audioRef',
  },
  'audio.publish': {
    description:
      'A recording published as an HLS stream, with a timed transcript in passages. Exactly one of audioUrl or audioRef.',
    fields: [
      {
        name: 'audioUrl',
        flag: 'audio-url',
        type: 'string',
        required: false,
        description: 'An https URL the provider can fetch.',
      },
      { name: 'audioRef', flag: 'audio-ref', type: 'string', required: false },
      { name: 'language', flag: 'language', type: 'string', required: false },
      {
        name: 'title',
        flag: 'title',
        type: 'string',
        required: false,
        description: 'What search shows of the recording.',
      },
      {
        name: 'date',
        flag: 'date',
        type: 'string',
        required: false,
        description:
          'When it was preached or recorded; search filters by it. Default: the day it is published.',
      },
      {
        name: 'labels',
        flag: 'label',
        type: 'string',
        repeated: true,
        required: false,
        description: "The recording's own labels (a series, a speaker, a place); search filters by them.",
      },
    ],
    fileField: 'audioRef',
  },
} as const satisfies Readonly<Record<JobType, JobTypeInput>>;

/** The input field a file fills, per job type that takes one. */
export const FILE_INPUT_FIELD = {
  'image.generate': 'sourceImageRef',
  'audio.transcribe': 'audioRef',
  'audio.publish': 'audioRef',
} as const satisfies Partial<Record<JobType, string>>;
