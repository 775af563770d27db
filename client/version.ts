/** The SDK's version: the `User-Agent` names it, and the built package takes its version from here. */
export const SDK_VERSION = '0.2.0';
