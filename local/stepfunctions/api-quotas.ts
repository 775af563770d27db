import { TokenBuckets } from '../gateway/throttle';
import { ApiError } from './errors';

/**
 * Step Functions' API throttling for Standard workflows, as documented ("Quotas related to API action
 * throttling"): one token bucket per action, per account and Region, which holds `bucket` requests and
 * refills `refillPerSecond` a second; a request past it is refused with ThrottlingException, which the
 * AWS SDK retries a few times. The three largest Regions have larger buckets for some actions. Actions
 * the quotas do not list (RedriveExecution among them) are not throttled.
 */
export interface ApiQuota {
  readonly bucket: number;
  readonly refillPerSecond: number;
}

const LARGE_REGIONS: ReadonlySet<string> = new Set(['us-east-1', 'us-west-2', 'eu-west-1']);

const quota = (bucket: number, refillPerSecond: number): ApiQuota => ({ bucket, refillPerSecond });

/** [in US East (N. Virginia), US West (Oregon) and Europe (Ireland), in every other Region] */
const QUOTAS: Readonly<Record<string, readonly [ApiQuota, ApiQuota]>> = {
  StartExecution: [quota(1300, 300), quota(800, 150)],
  DescribeExecution: [quota(300, 15), quota(250, 10)],
  DescribeStateMachine: [quota(200, 20), quota(200, 20)],
  DescribeStateMachineForExecution: [quota(200, 1), quota(200, 1)],
  GetExecutionHistory: [quota(400, 20), quota(400, 20)],
  ListExecutions: [quota(200, 5), quota(100, 2)],
  ListStateMachines: [quota(100, 5), quota(100, 5)],
  SendTaskFailure: [quota(3000, 500), quota(1500, 300)],
  SendTaskHeartbeat: [quota(3000, 500), quota(1500, 300)],
  SendTaskSuccess: [quota(3000, 500), quota(1500, 300)],
  StopExecution: [quota(1000, 200), quota(500, 25)],
};

/** The quota of each throttled action in `region`. */
export function apiQuotas(region: string): Readonly<Record<string, ApiQuota>> {
  const large = LARGE_REGIONS.has(region);
  return Object.fromEntries(
    Object.entries(QUOTAS).map(([action, [inLarge, elsewhere]]) => [action, large ? inLarge : elsewhere]),
  );
}

/** The account's buckets in one Region: `admit` takes a token of the action's, or throws ThrottlingException. */
export class ApiThrottle {
  readonly #buckets: ReadonlyMap<string, TokenBuckets>;

  constructor(region: string, now?: () => number) {
    this.#buckets = new Map(
      Object.entries(apiQuotas(region)).map(([action, { bucket, refillPerSecond }]) => [
        action,
        new TokenBuckets(refillPerSecond, bucket, now),
      ]),
    );
  }

  admit(action: string): void {
    if (this.#buckets.get(action)?.take('account') === false) {
      throw new ApiError('ThrottlingException', 'Rate exceeded');
    }
  }
}
