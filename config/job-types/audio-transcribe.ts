import * as z from 'zod';
import {
  audioSourceInput,
  deepgramChannels,
  type Transcript,
  transcriptOutput,
  transcriptResult,
  transcriptSchema,
} from './common';
import { defineJobType, OutputInvalidError } from './job-type';

const input = audioSourceInput;

/** Deepgram's pre-recorded response, as far as a transcript needs it. */
const deepgramResponse = z.object({
  metadata: z.object({ duration: z.number().optional() }).loose().optional(),
  results: z.object({
    channels: deepgramChannels(
      z.object({
        transcript: z.string(),
        words: z.array(z.object({ start: z.number(), end: z.number() }).loose()).optional(),
      }),
    ),
    utterances: z.array(z.object({ start: z.number(), end: z.number(), transcript: z.string() })).optional(),
  }),
});

/** A Deepgram response as a transcript: its utterances are the segments. */
export function transcriptFromDeepgram(raw: unknown, language: string | undefined): Transcript {
  const parsed = deepgramResponse.safeParse(raw);
  if (!parsed.success) throw new OutputInvalidError('Deepgram returned no transcript.');
  const channel = parsed.data.results.channels[0];
  const best = channel?.alternatives[0];
  if (!channel || !best) throw new OutputInvalidError('Deepgram returned no transcript.');
  const words = best.words ?? [];
  const segments = parsed.data.results.utterances?.map((u) => ({
    start: u.start,
    end: u.end,
    text: u.transcript,
  })) ?? [{ start: words[0]?.start ?? 0, end: words.at(-1)?.end ?? 0, text: best.transcript }];
  return { language: channel.detected_language ?? language ?? 'en', text: best.transcript, segments };
}

export default defineJobType({
  name: 'audio.transcribe',
  description: 'A timed transcript of a recording.',
  input,
  result: transcriptResult('audio.transcribe'),
  schemaNames: { input: 'AudioTranscribeInput', result: 'TranscriptResult' },
  file: { refField: 'audioRef', urlField: 'audioUrl', mediaTypes: 'audio/*' },
  provider: 'deepgram',
  providers: {
    deepgram: {
      async request(raw, context) {
        const { audioUrl, audioRef, language } = input.parse(raw);
        return {
          url: audioUrl ?? (await context.inputUrl(audioRef as string)),
          options: {
            model: 'nova-3',
            smart_format: true,
            utterances: true,
            ...(language ? { language } : { detect_language: true }),
          },
        };
      },
      output(raw, jobInput) {
        return transcriptOutput(transcriptFromDeepgram(raw, jobInput.language as string | undefined));
      },
    },
    'longhaul-http': {
      async request(raw) {
        return { type: 'audio.transcribe', input: input.parse(raw) };
      },
      output(raw) {
        const parsed = z.object({ transcript: transcriptSchema }).safeParse(raw);
        if (!parsed.success) throw new OutputInvalidError('The provider returned no transcript.');
        return transcriptOutput(parsed.data.transcript);
      },
    },
  },
});
