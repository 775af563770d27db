/**
 * The simulator's default credentials, deterministic so that the local stack
 * and tests can verify what it sends without configuring anything. None of
 * them is a secret anywhere but on this machine.
 */

/** Standard Webhooks secret (`whsec_` + base64 of a 32-byte key) for Replicate webhooks. */
export const DEFAULT_REPLICATE_WEBHOOK_SECRET = 'whsec_n3T+bbsQNWPNUtmfwldigoJuHx42yUtbzknVxQiiqIE=';

/** The API Key Identifier Deepgram puts in a callback's `dg-token` header. */
export const DEFAULT_DEEPGRAM_API_KEY_ID = '5a1d1e5c-0000-4000-8000-00000000d6a1';

/** The project Deepgram's request lookup (`/v1/projects/{project_id}/requests/{request_id}`) answers for. */
export const DEFAULT_DEEPGRAM_PROJECT_ID = '5a1d1e5c-0000-4000-8000-00000000d6b0';
