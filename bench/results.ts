import type { PeerFigures } from './peer/bullmq';
import type { DropFigures } from './sections/ambiguity';
import type { BurstFigures } from './sections/backpressure';
import type { BatchFigures } from './sections/batch';
import type { ChoiceFigures } from './sections/choice';
import type { HandlerFigures } from './sections/coldstart';
import type { CostFigures } from './sections/cost';
import type { EmbeddingFigures } from './sections/embedding';
import type { FairnessFigures } from './sections/fairness';
import type { HandOffFigures } from './sections/handoff';
import type { LimitsFigures } from './sections/limits';
import type { MediaFigures } from './sections/media';
import type { MediaChangesFigures } from './sections/media-changes';
import type { ProgressFigures } from './sections/progress';
import type { ProvidersFigures } from './sections/providers';
import type { ReconcileFigures } from './sections/reconcile';
import type { PoolScaleFigures } from './sections/scale';
import type { ScheduleFigures } from './sections/schedule';
import type { SearchFigures } from './sections/search';
import type { Machine } from './support/common';

/**
 * One bench run's figures, as bench/results.json keeps them. A record of its
 * own that the summary, the goals and the sections read, so none of them
 * imports another to learn its shape.
 */
export interface Results {
  command: string;
  machine: Machine;
  startedAt: string;
  durationS: number;
  /** Each section's wall time, in the order they ran. */
  sectionsS?: Record<string, number>;
  progress?: ProgressFigures;
  reconcile?: ReconcileFigures;
  backPressure?: BurstFigures;
  handOff?: HandOffFigures;
  coldStart?: HandlerFigures[];
  cost?: CostFigures;
  poolScale?: PoolScaleFigures;
  acceptThenDrop?: DropFigures[];
  peer?: PeerFigures;
  providers?: ProvidersFigures;
  limits?: LimitsFigures;
  fairness?: FairnessFigures;
  choice?: ChoiceFigures;
  schedule?: ScheduleFigures;
  batch?: BatchFigures;
  media?: MediaFigures;
  embedding?: EmbeddingFigures;
  search?: SearchFigures;
  mediaChanges?: MediaChangesFigures;
}
