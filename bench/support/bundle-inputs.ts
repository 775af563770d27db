import type { Metafile } from 'esbuild';

/** What of a bundle's bytes one input brought: a package (every file of it together) or one source file. */
export interface BundleInput {
  readonly input: string;
  readonly kib: number;
}

/**
 * The `count` inputs that put the most bytes into `output`, from esbuild's
 * metafile. A package's files, with those of the packages nested under it,
 * count as one input named as it is imported (`zod`,
 * `@aws-lambda-powertools/logger`); the project's own files each count on
 * their own, by their path.
 */
export function largestInputs(output: Metafile['outputs'][string], count: number): BundleInput[] {
  const bytes = new Map<string, number>();
  for (const [path, input] of Object.entries(output.inputs)) {
    const name = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1] ?? path;
    bytes.set(name, (bytes.get(name) ?? 0) + input.bytesInOutput);
  }
  return [...bytes]
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .slice(0, count)
    .map(([input, size]) => ({ input, kib: Math.round((size / 1024) * 10) / 10 }));
}
