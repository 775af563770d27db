/**
 * Generated from the OpenAPI document (lambdas/api/openapi.ts, `x-job-types`)
 * by `npx tsx client/scripts/job-types.ts`. Do not edit by hand.
 */
import type { JobOf } from './types';

export const JOB_TYPES = ['image.generate', 'audio.transcribe'] as const;
export type JobType = (typeof JOB_TYPES)[number];

export const JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'canceled', 'needs_review'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

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

/** Each job type's input and result. */
export interface JobTypeSchemas {
  readonly 'image.generate': { readonly input: ImageGenerateInput; readonly result: ImageResult };
  readonly 'audio.transcribe': { readonly input: AudioTranscribeInput; readonly result: TranscriptResult };
}

export type ImageGenerateJob = JobOf<'image.generate'>;

export type AudioTranscribeJob = JobOf<'audio.transcribe'>;
