import { tmpdir } from 'node:os';
import { publishRenditionsKbps, type Settings } from '../../config/settings';
import { FfmpegMedia } from '../adapters/ffmpeg-media';
import { downloadToFile } from '../adapters/http-download';
import type { ComputeDeps } from '../domain/compute';
import type { PublishPlan } from '../domain/publish';
import { inputStore } from '../shared/ports/inputs';
import { jobStore } from '../shared/ports/job-store';
import { outputStore } from '../shared/ports/output-store';
import { timeline } from '../shared/ports/timeline';

/** How audio.publish cuts, encodes and bounds a recording, from the settings. */
export const publishPlanOf = (settings: Settings): PublishPlan => ({
  renditionsKbps: publishRenditionsKbps(settings),
  segmentSeconds: settings.publishSegmentSeconds,
  chunkSeconds: settings.transcribeChunkSeconds,
  maxDurationSeconds: settings.publishMaxDurationSeconds,
  lambdaMaxAudioSeconds: settings.computeLambdaMaxAudioSeconds,
});

/**
 * What the compute steps run on, the same in the compute function and in the
 * Fargate task: only where ffmpeg comes from differs (FFMPEG_PATH and
 * FFPROBE_PATH, else the npm packages' binaries).
 */
export const computeDeps = (settings: Settings): ComputeDeps => ({
  store: jobStore(),
  timeline: timeline(),
  now: () => new Date(),
  outputs: outputStore(),
  inputs: inputStore(),
  media: new FfmpegMedia({ processTimeoutMs: settings.computeTimeoutSeconds * 1000 }),
  download: (url, file) => downloadToFile(url, file, settings.computeTimeoutSeconds * 1000),
  scratchRoot: tmpdir(),
  plan: publishPlanOf(settings),
  inputUrlTtlSeconds: settings.uploadUrlTtlSeconds,
});
