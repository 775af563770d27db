/**
 * What a finished generation returns. Deterministic, so tests can assert on it
 * exactly, and small, so it fits in a webhook body the way a real provider's
 * inline results do.
 */

export type GenerationType = 'image.generate' | 'audio.transcribe';

export interface ImageOutput {
  readonly image: { readonly contentType: 'image/png'; readonly base64: string };
}

export interface TranscriptSegment {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

export interface TranscriptOutput {
  readonly transcript: {
    readonly language: string;
    readonly text: string;
    readonly segments: readonly TranscriptSegment[];
  };
}

export type GenerationOutput = ImageOutput | TranscriptOutput;

/** A 16x16 RGB gradient: a real PNG (valid chunks and CRCs) that image tooling can open. */
export const SAMPLE_PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAABk0lEQVR42hXRURVEIQhFUSIYgQhEIIIRiGAEIhjhRCACEYxgBCPMPL5ZrHvZIsIQVDDBhSmEsIQUtoBQQgtHuMITRAZjoAMb+GAOYrAGOdgDBjXowRncwRuIKENRxRRXphLKUlLZCkoprRzlKk8RMYahhhluTCOMZaSxDYwy2jjGNZ4h4gxHHXPcmU44y0lnOzjltHOc6zxHZDImOrGJT+YkJmuSkz1hUpOenMmdvIlIMAINLPBgBhGsIIMdEFTQwQlu8AKRxVjowha+mItYrEUu9oJFLXpxFnfxFiLJSDSxxJOZRLKSTHZCUkknJ7nJy7/DZmx0YxvfzE1s1iY3e8OmNr05m7t5++/w4aDfA/GvJPEFIb/lbwoaDlx4/B2KUWhhhReziGIVWez61qvo4hS3ePV3aEajjTXezCaa1WSz+zteTTenuc3rv8NhHPRgBz/MQxzWIQ/7fFHq0IdzuId3/g6XcdGLXfwyL3FZl7zs+wWvS1/O5V7e/Ts8xkMf9vDHfMRjPfKx31ezHv04j/t4jx9q4ZAQEJBMigAAAABJRU5ErkJggg==';

export const SAMPLE_TRANSCRIPT_SEGMENTS: readonly TranscriptSegment[] = [
  { start: 0, end: 2.5, text: 'Welcome to the long haul.' },
  { start: 2.5, end: 5.75, text: 'Slow jobs finish exactly once.' },
  { start: 5.75, end: 8, text: 'Thank you for waiting.' },
];

export function generationOutput(
  type: GenerationType,
  input: Readonly<Record<string, unknown>>,
): GenerationOutput {
  if (type === 'image.generate') {
    return { image: { contentType: 'image/png', base64: SAMPLE_PNG_BASE64 } };
  }
  const language = typeof input.language === 'string' && input.language !== '' ? input.language : 'en';
  return {
    transcript: {
      language,
      text: SAMPLE_TRANSCRIPT_SEGMENTS.map((segment) => segment.text).join(' '),
      segments: SAMPLE_TRANSCRIPT_SEGMENTS,
    },
  };
}
