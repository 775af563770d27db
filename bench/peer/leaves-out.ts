/**
 * What Longhaul does on every job that the peer leaves out, so its speed and
 * CPU are read for what they buy (bench/peer/server.ts is the whole peer).
 */
export const PEER_LEAVES_OUT = [
  'API keys and tenant isolation',
  'per-tenant caps and weighted fair share',
  'a limit per provider (one concurrency for every job)',
  'idempotency-key reuse checks (a key sent again with another body gets the first job, no 422; no 409 while in use)',
  'a durable job table (Redis fsyncs its log once a second)',
  'a reconciler (a lost outcome waits for the attempt timeout, then the job is submitted again)',
  'review instead of a blind retry when a submission may have been charged',
  'scheduled jobs, cancel, a job timeline, signed webhooks to clients and a live progress stream',
] as const;
