import { loadSettings, type Settings } from '../../config/settings';

/** A required environment variable; a missing one fails the cold start loudly instead of the first request quietly. */
export function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`Missing required environment variable ${name}`);
  return value;
}

let settings: Settings | undefined;

/** The settings the stack handed this function (see config/settings.ts), read once. */
export function runtimeSettings(): Settings {
  settings ??= loadSettings(process.env);
  return settings;
}
