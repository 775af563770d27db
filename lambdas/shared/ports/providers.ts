import type { ProviderName } from '../../../config/providers';
import {
  type ProviderAdapter,
  type ProviderConfig,
  type ProviderFactory,
  providerAdapters,
} from '../../providers';
import type { BedrockAdapter } from '../../providers/bedrock';
import { runtimeSettings } from '../env';
import { providerSecretValue } from '../secrets';

/** Each provider's adapter, built from its secret on first use (and rebuilt when the cached secret changes). */
const providerCache = new Map<ProviderName, { key: string; adapter: ProviderAdapter<ProviderName> }>();
export async function providerAdapter(name: ProviderName): Promise<ProviderAdapter<ProviderName>> {
  const secret = await providerSecretValue(name);
  const settings = runtimeSettings().providers[name];
  const config: ProviderConfig = {
    baseUrl: secret.baseUrl ?? settings.baseUrl,
    ...(secret.apiKey ? { apiKey: secret.apiKey } : {}),
    webhookSecret: secret.webhookSecret,
    ...(secret.projectId ? { projectId: secret.projectId } : {}),
    deduplicates: settings.deduplicates,
    submitTimeoutMs: settings.submitTimeoutMs,
    readTimeoutMs: settings.submitTimeoutMs,
  };
  const key = JSON.stringify(config);
  const cached = providerCache.get(name);
  if (cached?.key === key) return cached.adapter;
  const adapter = (providerAdapters[name] as ProviderFactory<ProviderName>)(config);
  providerCache.set(name, { key, adapter });
  return adapter;
}

/** The embedding provider's adapter, for a search's query: its one call made outside any job. */
export async function embeddingProvider(): Promise<BedrockAdapter> {
  return (await providerAdapter('bedrock')) as BedrockAdapter;
}
