import type { ProviderConfig } from './config';
import { type RunningSimulator, startSimulator } from './provider-sim/simulator';

/**
 * The media provider the handlers call: the one at PROVIDER_URL, which the
 * stack leaves alone (like a real provider, it outlives the stack), or else
 * the simulator, started in this process and stopped with the stack.
 */
export interface LocalProvider {
  readonly url: string;
  /** The simulator this stack started, if it started one. */
  readonly simulator: RunningSimulator | undefined;
  close(): Promise<void>;
}

export async function startProvider(
  config: ProviderConfig,
  host: '127.0.0.1',
  log: (line: string) => void,
): Promise<LocalProvider> {
  if (config.url !== undefined) {
    log(`using the provider at ${config.url}; no simulator started`);
    return { url: config.url, simulator: undefined, close: async () => undefined };
  }
  const { port, jobMs, progressHz, idempotent } = config.simulator;
  let simulator: RunningSimulator;
  try {
    simulator = await startSimulator({
      host,
      port,
      jobMs,
      progressHz,
      idempotent,
      webhookSecret: config.webhookSecret,
      replicateWebhookSecret: config.dialects.replicate.webhookSecret,
      ...(config.apiKey === undefined ? {} : { apiKey: config.apiKey }),
      log: (line) => log(`provider: ${line}`),
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new Error(
        `SIM_PORT ${port} is already in use; set SIM_PORT to another port (0 for any free one), ` +
          'or PROVIDER_URL to use a provider that is already running',
      );
    }
    throw error;
  }
  log(
    `simulated provider at ${simulator.url} (jobMs=${jobMs} progressHz=${progressHz} idempotent=${idempotent})`,
  );
  return { url: simulator.url, simulator, close: () => simulator.close() };
}
