import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import * as z from 'zod';
import { providerSecretEnv, resourceEnv } from '../../config/layout';
import type { ProviderName } from '../../config/providers';
import { requireEnv } from './env';

/**
 * Secrets come from Secrets Manager (a local stand-in serves the same API
 * locally), cached in memory for a few minutes so a rotation reaches running
 * functions without a redeploy.
 */
const CACHE_SECONDS = 300;

const providerSecret = z.object({
  /** Overrides the provider's base URL from the settings. */
  baseUrl: z.url().optional(),
  apiKey: z.string().optional(),
  webhookSecret: z.string().min(16),
  /** Deepgram: the project whose request records answer status questions. */
  projectId: z.string().min(1).optional(),
});
export type ProviderSecret = z.infer<typeof providerSecret>;

/** One provider's secret (config/providers.ts), from its own Secrets Manager secret. */
export async function providerSecretValue(provider: ProviderName): Promise<ProviderSecret> {
  const value = await getSecret(requireEnv(providerSecretEnv(provider)), {
    transform: 'json',
    maxAge: CACHE_SECONDS,
  });
  const parsed = providerSecret.safeParse(value);
  // Never echo the secret: name the fields that are wrong, nothing else.
  if (!parsed.success) {
    throw new Error(
      `The secret of provider ${provider} is invalid at ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}`,
    );
  }
  return parsed.data;
}

export async function webhookSigningSecret(): Promise<string> {
  const value = await getSecret(requireEnv(resourceEnv.webhookSecretArn), { maxAge: CACHE_SECONDS });
  if (typeof value !== 'string' || value.length < 16)
    throw new Error('Webhook signing secret is missing or too short.');
  return value;
}
