import { LEGACY_PROVIDER, type ProviderName } from '../config/providers';

/**
 * What names a provider's own resources and stack outputs (`ProviderSecret<suffix>`,
 * `ProviderSecretArn<suffix>`, `Queue<suffix>`): the first provider keeps the
 * bare names it had when it was the only one, so no deployed secret or queue
 * is replaced.
 */
export const providerIdSuffix = (provider: ProviderName): string =>
  provider === LEGACY_PROVIDER
    ? ''
    : provider.replace(/(^|[^A-Za-z0-9])([a-z])/g, (_, _sep: string, letter: string) => letter.toUpperCase());
