import { UsageError } from './usage-error';

/**
 * How long, as people write it on a command line: `90` or `90s` (seconds),
 * `2m`, `1h`, `1d`. One parser for `--timeout` and a relative `--at`, so
 * both read the same way and the help says it once (DURATION_HELP).
 */

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

export const DURATION_HELP = '90s, 2m, 1h or 1d; a bare number is seconds';

/** The seconds `value` of `flag` stands for; a usage error that names the flag otherwise. */
export function durationSeconds(flag: string, value: string): number {
  const match = /^(\d+)([smhd]?)$/.exec(value.trim());
  const seconds = match
    ? Number(match[1]) * UNIT_SECONDS[(match[2] || 's') as keyof typeof UNIT_SECONDS]
    : NaN;
  if (!Number.isSafeInteger(seconds) || seconds < 1) {
    throw new UsageError(`${flag} takes a duration: ${DURATION_HELP}; not "${value}".`);
  }
  return seconds;
}

/** An RFC 3339 time with a date, a time and an offset (Z or ±hh:mm), as the API takes `runAt`. */
const RFC_3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * `--at` (or `--start-by`): a time to run a job, either RFC 3339 with an offset, sent as
 * written (the API refuses one too far ahead for the deployment), or a
 * duration from now (`--at 2h`), turned into the time it names.
 */
export function runAtOf(value: string, now: Date, flag = '--at'): string {
  if (RFC_3339.test(value) && !Number.isNaN(Date.parse(value))) return value;
  if (/^\d+[smhd]?$/.test(value.trim())) {
    return new Date(now.getTime() + durationSeconds(flag, value) * 1000).toISOString();
  }
  throw new UsageError(
    `${flag} takes an RFC 3339 time with an offset (2026-03-01T09:00:00Z) or a duration from now (${DURATION_HELP}); not "${value}".`,
  );
}
