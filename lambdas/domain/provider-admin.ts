import * as z from 'zod';
import { PROVIDER_NAMES, type ProviderName } from '../../config/providers';
import { type FillDeps, handOnFreeSlots } from './dispatch';
import { ProviderNotFoundError } from './errors';
import type { EventDeps } from './events';
import { type ProviderStatus, type ProviderStatusDeps, providerStatusOf } from './operator';
import type { Timeline } from './ports';
import {
  announcePause,
  announceResume,
  isPaused,
  PAUSE_DEFAULTS,
  type PauseSettings,
} from './provider-pauses';
import { toValidationError } from './requests';

/**
 * An operator pauses a provider by hand (its maintenance, a bill to settle, a
 * model misbehaving) and resumes it: the same pause a 429 or a 503 sets, on
 * the provider's slot pool, so its jobs wait in their lines as they do in an
 * outage, and none fails.
 */

/** The longest pause an operator sets in one request: a week. Resume ends it sooner; a new pause lengthens it. */
export const PAUSE_BY_HAND_MAX_SECONDS = 7 * 24 * 3600;

const seconds = `must be an integer from 1 to ${PAUSE_BY_HAND_MAX_SECONDS}`;
const reason = 'must be 1 to 500 characters, not only white space';

export const providerPauseRequest = z
  .strictObject({
    seconds: z
      .number({ error: seconds })
      .int(seconds)
      .min(1, seconds)
      .max(PAUSE_BY_HAND_MAX_SECONDS, seconds)
      .describe('How long from now no job is granted a slot at the provider.'),
    reason: z
      .string({ error: reason })
      .trim()
      .min(1, reason)
      .max(500, reason)
      .describe('Why: shown in GET /v1/admin/providers and put on the bus with `provider.paused`.'),
  })
  .meta({
    description:
      "A pause by hand: the provider's jobs wait in their lines until it ends or a resume ends it. A pause already in force that lasts longer is kept.",
  });
export type ProviderPauseRequest = z.infer<typeof providerPauseRequest>;

/** The `{provider}` of a path: a provider of the catalog, or not found. */
export function parseProviderName(value: string | undefined): ProviderName {
  const found = PROVIDER_NAMES.find((name) => name === value);
  if (found === undefined) throw new ProviderNotFoundError(value === undefined ? '' : value.slice(0, 64));
  return found;
}

export function parseProviderPause(body: unknown): ProviderPauseRequest {
  const parsed = providerPauseRequest.safeParse(body);
  if (!parsed.success) throw toValidationError(parsed.error);
  return parsed.data;
}

export interface ProviderAdminDeps extends ProviderStatusDeps, EventDeps {
  /** How long the provider's own refusals pause it (default `PAUSE_DEFAULTS`). */
  readonly providerPause?: PauseSettings;
}

/**
 * Pauses the provider's grants for `request.seconds` from now, unless a pause
 * in force lasts longer (kept, and nothing is put). Slots held are not
 * touched: jobs running at the provider run to their end. Answers the
 * provider's status after it.
 *
 * The pause records the length of the provider's own last pause, not its own:
 * a refusal soon after a pause doubles that length, and a maintenance window
 * of an hour is no sign that the provider is down for longer than it says.
 */
export async function pauseProviderByHand(
  deps: ProviderAdminDeps,
  provider: ProviderName,
  request: ProviderPauseRequest,
): Promise<ProviderStatus> {
  const now = deps.now();
  const until = new Date(now.getTime() + request.seconds * 1000);
  const pool = deps.slots(provider);
  const { pauseSeconds } = await pool.state();
  const set = await pool.pause({
    until,
    seconds: pauseSeconds ?? (deps.providerPause ?? PAUSE_DEFAULTS).baseSeconds,
    reason: request.reason,
  });
  if (set) {
    await announcePause(
      { provider, events: deps.events },
      { until, reason: request.reason, by: 'operator' },
      now,
    );
  }
  return providerStatusOf(deps, provider);
}

/**
 * Ends the provider's pause now and hands its free slots to the jobs waiting
 * in their lines, as a release does: their own next look would come only at
 * the pause's end. A provider that is not paused is left as it is.
 */
export async function resumeProviderByHand(
  deps: ProviderAdminDeps & FillDeps & { readonly timeline: Pick<Timeline, 'record'> },
  provider: ProviderName,
): Promise<ProviderStatus> {
  const pool = deps.slots(provider);
  const state = await pool.state();
  const now = deps.now();
  if (state.pausedUntil !== undefined && isPaused(state, now)) {
    await pool.resume();
    await handOnFreeSlots(deps, provider, `${provider} resumed by an operator`);
    await announceResume(
      { provider, events: deps.events },
      { pausedUntil: state.pausedUntil, by: 'operator' },
      now,
    );
  }
  return providerStatusOf(deps, provider);
}
