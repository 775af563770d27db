import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import { z } from 'zod';
import { resourceEnv } from '../../config/layout';
import { requireEnv } from './env';

/**
 * Secrets come from Secrets Manager (a local stand-in serves the same API
 * locally), cached in memory for a few minutes so a rotation reaches running
 * functions without a redeploy.
 */
const CACHE_SECONDS = 300;

const providerSecret = z.object({
  baseUrl: z.url(),
  apiKey: z.string().optional(),
  webhookSecret: z.string().min(16),
});
export type ProviderSecret = z.infer<typeof providerSecret>;

export async function providerSecretValue(): Promise<ProviderSecret> {
  const value = await getSecret(requireEnv(resourceEnv.providerSecretArn), {
    transform: 'json',
    maxAge: CACHE_SECONDS,
  });
  const parsed = providerSecret.safeParse(value);
  // Never echo the secret: name the fields that are wrong, nothing else.
  if (!parsed.success) {
    throw new Error(
      `Provider secret is invalid at ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}`,
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
