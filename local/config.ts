import { resolve } from 'node:path';
import * as z from 'zod';
import type { ProviderName } from '../config/providers';
import { ADMIN_TENANT_ID, TENANT_ID_PATTERN, TENANT_ID_RULE } from '../lambdas/domain/tenants';
import { LOG_FORMATS, type LogFormat } from './log-lines';
import { DEFAULT_REPLICATE_WEBHOOK_SECRET } from './provider-sim/defaults';

/**
 * The local stack's own environment (contract section 2), apart from the
 * settings every deployment shares (config/settings.ts). Parsed once at
 * start-up; a bad value stops it with a message naming the variable. API key
 * values and the other secrets are never repeated in a message.
 */

/** Who an API key belongs to; the seed of the local API key table. */
export interface ApiKeyGrant {
  readonly key: string;
  readonly tenantId: string;
  readonly role: 'tenant' | 'admin';
}

/** The simulated provider the stack starts when no PROVIDER_URL is given (contract section 3). */
export interface SimulatorConfig {
  /** 0 picks a free port. */
  readonly port: number;
  readonly jobMs: number;
  readonly progressHz: number;
  readonly idempotent: boolean;
}

/** Where one provider's dialect lives on the (simulated) provider, and the key its webhooks are checked with. */
export interface DialectConfig {
  /** Appended to the provider's URL: the provider's base URL as its adapter expects it. */
  readonly basePath: string;
  readonly webhookSecret: string;
}

export interface ProviderConfig {
  /** An already running provider; when absent the stack starts the simulator. */
  readonly url?: string;
  /** Signs the generic provider's webhooks; the simulator signs with it and the handlers check it. */
  readonly webhookSecret: string;
  /** Each provider's dialect (contract section 3). */
  readonly dialects: Readonly<Record<ProviderName, DialectConfig>>;
  /** Bearer key the provider requires, if any. */
  readonly apiKey?: string;
  readonly simulator: SimulatorConfig;
}

export interface LocalConfig {
  /** HTTP port of the gateway; 0 picks a free one. */
  readonly port: number;
  /** Tenant keys first, then the admin key. */
  readonly apiKeys: readonly ApiKeyGrant[];
  /** Absolute directory holding the emulators' durable state. */
  readonly dataDir: string;
  readonly provider: ProviderConfig;
  /** Signs Longhaul's webhooks to clients (`Longhaul-Signature`). */
  readonly webhookSigningSecret: string;
  /**
   * Whether the jobs queue is consumed, like an event source mapping's
   * `Enabled`; off, jobs stay in the queue for a test or an operator to inspect.
   */
  readonly dispatchEnabled: boolean;
  /** How the handlers' log records are printed: one short line each, or each record's JSON on one line. */
  readonly logFormat: LogFormat;
}

export const localDefaults = {
  PORT: '3000',
  LONGHAUL_API_KEYS: 'dev-key:dev',
  LONGHAUL_ADMIN_KEY: 'dev-admin-key',
  LONGHAUL_DATA_DIR: '.longhaul',
  SIM_PORT: '3100',
  SIM_JOB_MS: '3000',
  SIM_PROGRESS_HZ: '10',
  SIM_IDEMPOTENT: '1',
  PROVIDER_WEBHOOK_SECRET: 'dev-provider-webhook-secret',
  // A Standard Webhooks key, as Replicate issues them: whsec_ and base64.
  REPLICATE_WEBHOOK_SECRET: DEFAULT_REPLICATE_WEBHOOK_SECRET,
  DEEPGRAM_CALLBACK_SECRET: 'dev-deepgram-callback-secret',
  LONGHAUL_WEBHOOK_SECRET: 'dev-webhook-signing-secret',
  LONGHAUL_DISPATCH: '1',
  LOG_FORMAT: 'short',
} as const;

/**
 * Bedrock answers each call at once and sends no webhooks, but a provider's
 * secret always holds a `webhookSecret` (in AWS a generated one nobody uses).
 */
const UNUSED_WEBHOOK_SECRET = 'bedrock-sends-no-webhooks';

/** Variables with no default: unset means "none". */
const optionalVariables = ['PROVIDER_URL', 'PROVIDER_API_KEY'] as const;
type Variable = keyof typeof localDefaults | (typeof optionalVariables)[number];

export class LocalConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid local stack environment:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'LocalConfigError';
  }
}

// Printable ASCII without spaces; a comma separates entries, so it cannot occur.
const API_KEY = /^[\x21-\x2b\x2d-\x7e]{1,256}$/;

const portSchema = z
  .string()
  .regex(/^\d{1,5}$/, 'must be a whole number from 0 to 65535')
  .transform(Number)
  .pipe(z.number().max(65_535, 'must be a whole number from 0 to 65535'));

const tenantKeysSchema = z.string().transform((raw, ctx) => {
  const grants: ApiKeyGrant[] = [];
  raw.split(',').forEach((entry, index) => {
    const where = `entry ${index + 1}`;
    const trimmed = entry.trim();
    const colon = trimmed.lastIndexOf(':');
    if (colon <= 0 || colon === trimmed.length - 1) {
      ctx.addIssue({ code: 'custom', message: `${where} must look like key:tenant` });
      return;
    }
    const key = trimmed.slice(0, colon);
    const tenantId = trimmed.slice(colon + 1);
    if (!API_KEY.test(key)) {
      ctx.addIssue({
        code: 'custom',
        message: `${where}: the key must be 1 to 256 printable ASCII characters without spaces or commas`,
      });
      return;
    }
    if (!TENANT_ID_PATTERN.test(tenantId)) {
      ctx.addIssue({
        code: 'custom',
        message: `${where}: the tenant must be ${TENANT_ID_RULE}`,
      });
      return;
    }
    if (tenantId === ADMIN_TENANT_ID) {
      ctx.addIssue({ code: 'custom', message: `${where}: the tenant name '${ADMIN_TENANT_ID}' is reserved` });
      return;
    }
    grants.push({ key, tenantId, role: 'tenant' });
  });
  return grants;
});

const adminKeySchema = z
  .string()
  .regex(API_KEY, 'must be 1 to 256 printable ASCII characters without spaces or commas');

const dataDirSchema = z.string().min(1, 'must not be empty');

const wholeNumber = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,12}$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

const progressHzSchema = z
  .string()
  .regex(/^\d+(\.\d+)?$/, 'must be a number')
  .transform(Number)
  .pipe(z.number().positive('must be greater than 0').max(1000, 'must be at most 1000'));

const FLAG_VALUES = ['1', '0', 'true', 'false'] as const;
const flagSchema = z
  .enum(FLAG_VALUES, 'must be 1, 0, true or false')
  .transform((value) => value === '1' || value === 'true');

const providerUrlSchema = z
  .url({ protocol: /^https?$/, error: 'must be an http or https URL' })
  // The adapter resolves its absolute paths (/v1/generations) against this URL, which would drop a path of its own.
  .refine((value) => {
    const url = new URL(value);
    return url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password;
  }, 'must be an origin such as http://127.0.0.1:3100, without a path, query, fragment or credentials')
  .transform((value) => new URL(value).origin);

// The handlers refuse shorter secrets (lambdas/shared/secrets.ts), so a short one is refused here, at start-up.
const secretSchema = z.string().min(16, 'must be at least 16 characters');
const providerApiKeySchema = z
  .string()
  .regex(/^[\x21-\x7e]{1,1024}$/, 'must be 1 to 1024 printable ASCII characters without spaces');

type Env = Readonly<Record<string, string | undefined>>;

/** An unset or blank variable takes its default, as config/settings.ts does; one without a default is then undefined. */
function read(env: Env, name: Variable): string | undefined {
  const value = env[name]?.trim();
  if (value) return value;
  return name in localDefaults ? localDefaults[name as keyof typeof localDefaults] : undefined;
}

/** Reads the local stack's variables from `env`; throws a {@link LocalConfigError} listing every bad one. */
export function parseLocalConfig(env: Env, cwd: string = process.cwd()): LocalConfig {
  const problems: string[] = [];
  // A variable with a default yields its value, or, when it is bad, records a problem and yields nothing;
  // the values are only used once no problem was recorded.
  function field<T>(name: keyof typeof localDefaults, schema: z.ZodType<T>, echo: boolean): T;
  function field<T>(name: Variable, schema: z.ZodType<T>, echo: boolean): T | undefined;
  function field<T>(name: Variable, schema: z.ZodType<T>, echo: boolean): T | undefined {
    const raw = read(env, name);
    if (raw === undefined) return undefined;
    const parsed = schema.safeParse(raw);
    if (parsed.success) return parsed.data;
    const reasons = parsed.error.issues.map((issue) => issue.message).join('; ');
    problems.push(echo ? `${name}=${JSON.stringify(raw)}: ${reasons}` : `${name}: ${reasons}`);
    return undefined;
  }

  const port = field('PORT', portSchema, true);
  const tenantKeys = field('LONGHAUL_API_KEYS', tenantKeysSchema, false);
  const adminKey = field('LONGHAUL_ADMIN_KEY', adminKeySchema, false);
  const dataDir = field('LONGHAUL_DATA_DIR', dataDirSchema, true);
  const providerUrl = field('PROVIDER_URL', providerUrlSchema, true);
  const simulator = {
    port: field('SIM_PORT', portSchema, true),
    jobMs: field('SIM_JOB_MS', wholeNumber(1, 86_400_000), true),
    progressHz: field('SIM_PROGRESS_HZ', progressHzSchema, true),
    idempotent: field('SIM_IDEMPOTENT', flagSchema, true),
  };
  const providerWebhookSecret = field('PROVIDER_WEBHOOK_SECRET', secretSchema, false);
  const providerApiKey = field('PROVIDER_API_KEY', providerApiKeySchema, false);
  const replicateWebhookSecret = field(
    'REPLICATE_WEBHOOK_SECRET',
    z.string().regex(/^whsec_[A-Za-z0-9+/=]{16,}$/, 'must be a Standard Webhooks key: whsec_ and base64'),
    false,
  );
  const deepgramCallbackSecret = field('DEEPGRAM_CALLBACK_SECRET', secretSchema, false);
  const webhookSigningSecret = field('LONGHAUL_WEBHOOK_SECRET', secretSchema, false);
  const dispatchEnabled = field('LONGHAUL_DISPATCH', flagSchema, true);
  const logFormat = field(
    'LOG_FORMAT',
    z.enum(LOG_FORMATS, { error: `must be ${LOG_FORMATS.join(' or ')}` }),
    true,
  );

  if (tenantKeys && adminKey !== undefined) {
    const seen = new Set<string>();
    tenantKeys.forEach((grant, index) => {
      if (seen.has(grant.key)) problems.push(`LONGHAUL_API_KEYS: entry ${index + 1} repeats an earlier key`);
      if (grant.key === adminKey) problems.push(`LONGHAUL_API_KEYS: entry ${index + 1} uses the admin key`);
      seen.add(grant.key);
    });
  }
  if (problems.length > 0) throw new LocalConfigError(problems);
  return Object.freeze({
    port,
    apiKeys: [...tenantKeys, { key: adminKey, tenantId: ADMIN_TENANT_ID, role: 'admin' as const }],
    dataDir: resolve(cwd, dataDir),
    provider: Object.freeze({
      ...(providerUrl === undefined ? {} : { url: providerUrl }),
      webhookSecret: providerWebhookSecret,
      dialects: Object.freeze({
        'longhaul-http': { basePath: '', webhookSecret: providerWebhookSecret },
        replicate: { basePath: '/replicate/v1', webhookSecret: replicateWebhookSecret },
        deepgram: { basePath: '/deepgram', webhookSecret: deepgramCallbackSecret },
        bedrock: { basePath: '/bedrock', webhookSecret: UNUSED_WEBHOOK_SECRET },
      }),
      ...(providerApiKey === undefined ? {} : { apiKey: providerApiKey }),
      simulator: Object.freeze(simulator),
    }),
    webhookSigningSecret,
    dispatchEnabled,
    logFormat,
  });
}

/**
 * The environment the shared settings are read from locally. Webhooks to
 * private and loopback addresses are refused in AWS but are how a local
 * client listens, so locally they are allowed unless the environment says
 * otherwise. What the provider adapter believes about deduplication follows
 * the simulator's SIM_IDEMPOTENT unless PROVIDER_IDEMPOTENT says otherwise
 * (contract section 2); a bad SIM_IDEMPOTENT is reported under its own name.
 */
export function localSettingsEnvironment(env: Env): Record<string, string | undefined> {
  const simIdempotent = read(env, 'SIM_IDEMPOTENT');
  const followsSimulator = (FLAG_VALUES as readonly (string | undefined)[]).includes(simIdempotent);
  return {
    ...env,
    ALLOW_PRIVATE_WEBHOOKS: env.ALLOW_PRIVATE_WEBHOOKS?.trim() || 'true',
    PROVIDER_IDEMPOTENT: env.PROVIDER_IDEMPOTENT?.trim() || (followsSimulator ? simIdempotent : undefined),
  };
}
