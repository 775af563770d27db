import { version } from '../package.json';

/**
 * Longhaul's one version number, the root package.json's (the CHANGELOG's
 * newest heading): the `User-Agent` names it, `longhaul --version` prints it,
 * and the built client package is published under it.
 */
export const SDK_VERSION: string = version;
