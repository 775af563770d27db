import { PROVIDER_NAMES, PROVIDERS } from '../../../config/providers';
import { type ProviderConfig, providerAdapters } from '../../../lambdas/providers';

const config: ProviderConfig = {
  baseUrl: 'http://127.0.0.1:1',
  apiKey: 'key',
  webhookSecret: `whsec_${Buffer.from('a-signing-key-of-thirty-two-byte').toString('base64')}`,
  deduplicates: true,
  submitTimeoutMs: 1000,
  readTimeoutMs: 1000,
};

describe('providerAdapters', () => {
  it('has an adapter for every provider of the catalog and none besides', () => {
    expect(Object.keys(providerAdapters).sort()).toEqual([...PROVIDER_NAMES].sort());
  });

  it.each(PROVIDER_NAMES)('builds %s under its own name, deduplicating as the catalog says', (name) => {
    const adapter = providerAdapters[name](config);

    expect(adapter.name).toBe(name);
    expect(adapter.deduplicates).toBe(PROVIDERS[name].deduplicates === false ? false : config.deduplicates);
  });
});
