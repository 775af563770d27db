/**
 * For a function that may spend up to a second waiting for a rate's token
 * (`TOKEN_WAIT_IN_PLACE_MS`): the dispatcher, the steps and the reconciler, not the api, whose
 * caller waits for its answer.
 */
export const waitingForTokens = {
  sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
} as const;
