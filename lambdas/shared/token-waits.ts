import { setTimeout } from 'node:timers/promises';

/**
 * For a function that may spend up to a second waiting for a rate's token
 * (`TOKEN_WAIT_IN_PLACE_MS`): the dispatcher, the steps and the reconciler, not the api, whose
 * caller waits for its answer.
 */
export const waitingForTokens = {
  sleep: (ms: number): Promise<void> => setTimeout(ms),
} as const;
