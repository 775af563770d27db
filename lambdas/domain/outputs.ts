import { z } from 'zod';
import { InvalidJobInputError } from './errors';
import type { JobType } from './job';

/** What the provider returns per job type, checked before anything is stored. */

const imageOutput = z.object({
  image: z.object({ contentType: z.string().regex(/^image\/[\w.+-]+$/), base64: z.string().min(1) }),
});

const transcriptOutput = z.object({
  transcript: z.object({
    language: z.string().min(1).max(35),
    text: z.string(),
    segments: z.array(z.object({ start: z.number().min(0), end: z.number().min(0), text: z.string() })),
  }),
});

export type Transcript = z.infer<typeof transcriptOutput>['transcript'];

export type FinalOutput =
  | { readonly kind: 'image'; readonly contentType: string; readonly bytes: Uint8Array }
  | { readonly kind: 'transcript'; readonly transcript: Transcript };

export function parseProviderOutput(type: JobType, output: unknown): FinalOutput {
  if (type === 'image.generate') {
    const parsed = imageOutput.safeParse(output);
    if (parsed.success) {
      return {
        kind: 'image',
        contentType: parsed.data.image.contentType,
        bytes: Buffer.from(parsed.data.image.base64, 'base64'),
      };
    }
  } else {
    const parsed = transcriptOutput.safeParse(output);
    if (parsed.success) return { kind: 'transcript', transcript: parsed.data.transcript };
  }
  throw new InvalidJobInputError(
    '[output_invalid] The provider returned an unusable output.',
    'output_invalid',
  );
}
