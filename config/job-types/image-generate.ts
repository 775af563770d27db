import * as z from 'zod';
import { imageExtension, imageTypeOfUrl, uploadRef } from './common';
import { defineJobType, OutputInvalidError } from './job-type';

const dimension = z.number().int().min(64).max(2048);

const input = z.strictObject({
  prompt: z.string().min(1).max(4000),
  width: dimension.optional(),
  height: dimension.optional(),
  sourceImageRef: uploadRef.optional(),
});

/** The aspect ratios the Replicate model takes; the nearest to the asked width:height is sent. */
const ASPECT_RATIOS = [
  '1:1',
  '16:9',
  '21:9',
  '3:2',
  '2:3',
  '4:5',
  '5:4',
  '3:4',
  '4:3',
  '9:16',
  '9:21',
] as const;

export const nearestAspectRatio = (width: number, height: number): string => {
  const wanted = Math.log(width / height);
  let best: string = ASPECT_RATIOS[0];
  for (const ratio of ASPECT_RATIOS) {
    const [w = 1, h = 1] = ratio.split(':').map(Number);
    const [bw = 1, bh = 1] = best.split(':').map(Number);
    if (Math.abs(Math.log(w / h) - wanted) < Math.abs(Math.log(bw / bh) - wanted)) best = ratio;
  }
  return best;
};

/** What the generic provider returns: the image inline. */
const inlineImage = z.object({
  image: z.object({ contentType: z.string().regex(/^image\/[\w.+-]+$/), base64: z.string().min(1) }),
});

/** A Replicate image model's output: one URL, or a list of them. */
const replicateOutput = z.union([z.url(), z.array(z.url()).min(1)]);

const imageResult = (contentType: string) => ({ contentType });

export default defineJobType({
  name: 'image.generate',
  description: 'An image generated from a text prompt, optionally from a source image.',
  input,
  result: z
    .strictObject({
      outputUrl: z.url().describe('Presigned GET URL of the image.'),
      contentType: z.string().regex(/^image\//),
    })
    .describe('Result of an image.generate job.'),
  schemaNames: { input: 'ImageGenerateInput', result: 'ImageResult' },
  file: { refField: 'sourceImageRef', mediaTypes: 'image/*' },
  provider: 'replicate',
  providers: {
    replicate: {
      async request(raw, context) {
        const { prompt, width, height, sourceImageRef } = input.parse(raw);
        return {
          model: 'black-forest-labs/flux-dev',
          input: {
            prompt,
            output_format: 'png',
            ...(width && height ? { aspect_ratio: nearestAspectRatio(width, height) } : {}),
            ...(sourceImageRef ? { image: await context.inputUrl(sourceImageRef) } : {}),
          },
        };
      },
      output(raw) {
        const parsed = replicateOutput.safeParse(raw);
        if (!parsed.success) throw new OutputInvalidError('The model returned no image URL.');
        const url = typeof parsed.data === 'string' ? parsed.data : (parsed.data[0] as string);
        const contentType = imageTypeOfUrl(url);
        return {
          files: [
            {
              field: 'output',
              fileName: `image.${imageExtension(contentType)}`,
              contentType,
              content: { url },
            },
          ],
          result: imageResult(contentType),
        };
      },
    },
    'longhaul-http': {
      async request(raw) {
        return { type: 'image.generate', input: input.parse(raw) };
      },
      output(raw) {
        const parsed = inlineImage.safeParse(raw);
        if (!parsed.success) throw new OutputInvalidError('The provider returned no image.');
        const { contentType, base64 } = parsed.data.image;
        return {
          files: [
            {
              field: 'output',
              fileName: `image.${imageExtension(contentType)}`,
              contentType,
              content: { bytes: Buffer.from(base64, 'base64') },
            },
          ],
          result: imageResult(contentType),
        };
      },
    },
  },
});
