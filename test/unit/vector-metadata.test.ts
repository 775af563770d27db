import publish from '../../config/job-types/audio-publish';
import { passageIndex } from '../../config/layout';
import { createMediaRequest, updateMediaRequest } from '../../config/media';
import { S3_VECTORS_LIMITS } from '../../config/s3-vectors';
import { LABEL_MAX_CHARS, LABELS_MAX, LABELS_MAX_BYTES } from '../../config/search';
import { ValidationError } from '../../lambdas/domain/errors';
import type { PassageMetadata } from '../../lambdas/domain/ports';
import { parseMediaRequest } from '../../lambdas/domain/requests';
import { TENANT_ID_PATTERN } from '../../lambdas/domain/tenant-settings';

/**
 * What a media item or a publish says of its recording goes into the
 * filterable metadata of every vector of its passages, which S3 Vectors
 * counts in bytes (2 KB), not characters: labels are held to what fits.
 */

/** Ten distinct labels of `chars` characters of `letter` (and a digit that tells them apart). */
const labelsOf = (letter: string, chars: number) =>
  Array.from({ length: LABELS_MAX }, (_, n) => `${n}${letter.repeat(chars - 1)}`);

/**
 * Ten distinct labels whose JSON takes exactly `bytes`: as many characters of
 * three bytes as each may hold (64 characters), then one or two bytes more.
 */
function labelsTaking(bytes: number): string[] {
  // The brackets, the commas between labels and the quotes around each.
  let left = bytes - 2 - (LABELS_MAX - 1) - 2 * LABELS_MAX;
  return Array.from({ length: LABELS_MAX }, (_, n) => {
    const target = Math.min(left - (LABELS_MAX - 1 - n), 1 + 3 * (LABEL_MAX_CHARS - 1));
    left -= target;
    const wide = Math.floor((target - 1) / 3);
    return `${n}${'說'.repeat(wide)}${['', 'a', 'é'][(target - 1) % 3]}`;
  });
}

const refusal = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.errors;
    throw error;
  }
  return undefined;
};

const filterableBytes = (metadata: PassageMetadata) =>
  Buffer.byteLength(
    JSON.stringify(
      Object.fromEntries(
        Object.entries(metadata).filter(
          ([key]) => !(passageIndex.nonFilterableMetadataKeys as readonly string[]).includes(key),
        ),
      ),
    ),
  );

describe('labels', () => {
  const cjk = labelsOf('說', LABEL_MAX_CHARS);

  it('refuses ten labels of 64 CJK characters with a precise problem, on an item, its change and a publish', () => {
    const expected = [
      {
        pointer: '/labels',
        detail: `must take at most ${LABELS_MAX_BYTES} bytes together (UTF-8, as JSON): each vector of the recording keeps them in its ${S3_VECTORS_LIMITS.filterableMetadataBytes} bytes of filterable metadata`,
      },
    ];
    expect(refusal(() => parseMediaRequest(createMediaRequest, { title: 't', labels: cjk }))).toEqual(
      expected,
    );
    expect(refusal(() => parseMediaRequest(updateMediaRequest, { labels: cjk }))).toEqual(expected);
    const parsed = publish.input.safeParse({ audioUrl: 'https://media.example/a.mp3', labels: cjk });
    expect(parsed.error?.issues.map((issue) => issue.message)).toEqual([expected[0]?.detail]);
  });

  it('takes ten labels of 64 letters, and any labels up to the bytes they may take', () => {
    expect(
      refusal(() => parseMediaRequest(createMediaRequest, { title: 't', labels: labelsOf('a', 64) })),
    ).toBe(undefined);
    const largest = labelsTaking(LABELS_MAX_BYTES);
    expect(Buffer.byteLength(JSON.stringify(largest))).toBe(LABELS_MAX_BYTES);
    expect(refusal(() => parseMediaRequest(updateMediaRequest, { labels: largest }))).toBe(undefined);
    expect(
      refusal(() => parseMediaRequest(updateMediaRequest, { labels: labelsTaking(LABELS_MAX_BYTES + 1) })),
    ).toEqual([expect.objectContaining({ pointer: '/labels' })]);
  });

  it('fit, at the most they may take, in the filterable metadata of a vector of the longest tenant name', () => {
    const tenant = 't'.repeat(64);
    expect(TENANT_ID_PATTERN.test(tenant)).toBe(true);
    expect(TENANT_ID_PATTERN.test(`${tenant}t`)).toBe(false);
    const metadata: PassageMetadata = {
      tenant,
      item: `med_${'a'.repeat(26)}`,
      date: -Number.MAX_VALUE,
      labels: labelsTaking(LABELS_MAX_BYTES),
      passage: -Number.MAX_VALUE,
      start: -Number.MAX_VALUE,
      end: -Number.MAX_VALUE,
      text: 'x'.repeat(10_000),
      title: 'y'.repeat(200),
    };
    expect(filterableBytes(metadata)).toBe(S3_VECTORS_LIMITS.filterableMetadataBytes);
  });
});
