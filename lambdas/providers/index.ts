import type { ProviderName } from '../../config/providers';
import { bedrock } from './bedrock';
import type { ProviderFactory } from './common';
import { deepgram } from './deepgram';
import { longhaulHttp } from './longhaul-http';
import { replicate } from './replicate';

export type { ProviderAdapter, ProviderConfig, ProviderFactory } from './common';

/** Every provider of the catalog (config/providers.ts) and its adapter: registering one is one line. */
export const providerAdapters = {
  'longhaul-http': longhaulHttp,
  replicate,
  deepgram,
  bedrock,
} as const satisfies { [P in ProviderName]: ProviderFactory<P> };
