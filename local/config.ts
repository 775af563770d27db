import { resolve } from 'node:path';
import { z } from 'zod';

/**
 * The local stack's own environment (contract section 2), apart from the
 * settings every deployment shares (config/settings.ts). Parsed once at
 * start-up; a bad value stops it with a message naming the variable. API key
 * values are secrets, so no message ever repeats one.
 */

/** Who an API key belongs to; the seed of the local API key table. */
export interface ApiKeyGrant {
  readonly key: string;
  readonly tenantId: string;
  readonly role: 'tenant' | 'admin';
}

export interface LocalConfig {
  /** HTTP port of the gateway; 0 picks a free one. */
  readonly port: number;
  /** Tenant keys first, then the admin key. */
  readonly apiKeys: readonly ApiKeyGrant[];
  /** Absolute directory holding the emulators' durable state. */
  readonly dataDir: string;
}

export const ADMIN_TENANT_ID = 'admin';

export const localDefaults = {
  PORT: '3000',
  LONGHAUL_API_KEYS: 'dev-key:dev',
  LONGHAUL_ADMIN_KEY: 'dev-admin-key',
  LONGHAUL_DATA_DIR: '.longhaul',
} as const;

export class LocalConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid local stack environment:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'LocalConfigError';
  }
}

// Printable ASCII without spaces; a comma separates entries, so it cannot occur.
const API_KEY = /^[\x21-\x2b\x2d-\x7e]{1,256}$/;
const TENANT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

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
    if (!TENANT_ID.test(tenantId)) {
      ctx.addIssue({
        code: 'custom',
        message: `${where}: the tenant must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
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

type Env = Readonly<Record<string, string | undefined>>;

/** An unset or blank variable takes its default, as config/settings.ts does. */
function read(env: Env, name: keyof typeof localDefaults): string {
  const value = env[name]?.trim();
  return value ? value : localDefaults[name];
}

/** Reads the local stack's variables from `env`; throws a {@link LocalConfigError} listing every bad one. */
export function parseLocalConfig(env: Env, cwd: string = process.cwd()): LocalConfig {
  const problems: string[] = [];
  const field = <T>(name: keyof typeof localDefaults, schema: z.ZodType<T>, echo: boolean): T | undefined => {
    const raw = read(env, name);
    const parsed = schema.safeParse(raw);
    if (parsed.success) return parsed.data;
    const reasons = parsed.error.issues.map((issue) => issue.message).join('; ');
    problems.push(echo ? `${name}=${JSON.stringify(raw)}: ${reasons}` : `${name}: ${reasons}`);
    return undefined;
  };

  const port = field('PORT', portSchema, true);
  const tenantKeys = field('LONGHAUL_API_KEYS', tenantKeysSchema, false);
  const adminKey = field('LONGHAUL_ADMIN_KEY', adminKeySchema, false);
  const dataDir = field('LONGHAUL_DATA_DIR', dataDirSchema, true);

  if (tenantKeys && adminKey !== undefined) {
    const seen = new Set<string>();
    tenantKeys.forEach((grant, index) => {
      if (seen.has(grant.key)) problems.push(`LONGHAUL_API_KEYS: entry ${index + 1} repeats an earlier key`);
      if (grant.key === adminKey) problems.push(`LONGHAUL_API_KEYS: entry ${index + 1} uses the admin key`);
      seen.add(grant.key);
    });
  }
  if (problems.length > 0 || port === undefined || !tenantKeys || adminKey === undefined || !dataDir) {
    throw new LocalConfigError(problems);
  }
  return Object.freeze({
    port,
    apiKeys: [...tenantKeys, { key: adminKey, tenantId: ADMIN_TENANT_ID, role: 'admin' as const }],
    dataDir: resolve(cwd, dataDir),
  });
}

/**
 * The environment the shared settings are read from locally. Webhooks to
 * private and loopback addresses are refused in AWS but are how a local
 * client listens, so locally they are allowed unless the environment says otherwise.
 */
export function localSettingsEnvironment(env: Env): Record<string, string | undefined> {
  return { ...env, ALLOW_PRIVATE_WEBHOOKS: env.ALLOW_PRIVATE_WEBHOOKS?.trim() || 'true' };
}
