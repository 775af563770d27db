/**
 * Generated from the OpenAPI document (lambdas/api/openapi.ts, `x-job-types`)
 * by `npx tsx client/scripts/job-types.ts`. Do not edit by hand. The SDK
 * ships alone, so it carries this copy of the server's facts;
 * test/unit/client-contract.test.ts fails when it is stale.
 */
import type { JobOf } from './types';

export type ImageGenerateJob = JobOf<'image.generate'>;

export type AudioTranscribeJob = JobOf<'audio.transcribe'>;

export type AudioPublishJob = JobOf<'audio.publish'>;
