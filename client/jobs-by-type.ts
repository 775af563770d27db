/**
 * Generated from the OpenAPI document (lambdas/api/openapi.ts, `x-job-types`)
 * by `npx tsx client/scripts/job-types.ts`. Do not edit by hand.
 */
import type { JobOf } from './types';

export type ImageGenerateJob = JobOf<'image.generate'>;

export type AudioTranscribeJob = JobOf<'audio.transcribe'>;

export type AudioPublishJob = JobOf<'audio.publish'>;
