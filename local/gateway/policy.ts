import type { APIGatewayAuthorizerResult } from 'aws-lambda';

/**
 * What API Gateway does with a Lambda authorizer's answer: check its shape
 * (a malformed answer is the API's fault, a 500) and evaluate its policy
 * against the method ARN of each request, including requests answered from
 * the cache, where a policy written for one route may not cover another.
 */

export class AuthorizerResultError extends Error {
  override name = 'AuthorizerResultError';
}

export type Effect = 'Allow' | 'Deny';

interface Statement {
  readonly Effect: Effect;
  readonly Action: readonly string[];
  readonly Resource: readonly string[];
}

export interface CheckedAuthorizerResult {
  readonly principalId: string;
  readonly statements: readonly Statement[];
  /** Context values, as API Gateway hands them to the integration: strings. */
  readonly context: Readonly<Record<string, string>>;
  readonly usageIdentifierKey: string | undefined;
}

const list = (value: unknown, what: string): string[] => {
  const values = Array.isArray(value) ? value : [value];
  if (values.length === 0 || !values.every((v) => typeof v === 'string')) {
    throw new AuthorizerResultError(`policy statement ${what} must be a string or a list of strings`);
  }
  return values;
};

export function checkAuthorizerResult(
  result: APIGatewayAuthorizerResult | undefined,
): CheckedAuthorizerResult {
  if (!result || typeof result !== 'object')
    throw new AuthorizerResultError('the authorizer returned no object');
  if (typeof result.principalId !== 'string' || result.principalId === '') {
    throw new AuthorizerResultError('principalId must be a non-empty string');
  }
  const rawStatements = (result.policyDocument as { Statement?: unknown } | undefined)?.Statement;
  if (rawStatements === undefined) throw new AuthorizerResultError('policyDocument.Statement is missing');
  const statements = (Array.isArray(rawStatements) ? rawStatements : [rawStatements]).map(
    (raw): Statement => {
      const statement = raw as Record<string, unknown>;
      if (statement.Effect !== 'Allow' && statement.Effect !== 'Deny') {
        throw new AuthorizerResultError('policy statement Effect must be Allow or Deny');
      }
      return {
        Effect: statement.Effect,
        Action: list(statement.Action, 'Action'),
        Resource: list(statement.Resource, 'Resource'),
      };
    },
  );
  const context: Record<string, string> = {};
  for (const [key, value] of Object.entries(result.context ?? {})) {
    if (value === null || value === undefined) continue;
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new AuthorizerResultError(`context.${key} must be a string, number or boolean`);
    }
    context[key] = String(value);
  }
  const usage = result.usageIdentifierKey;
  return {
    principalId: result.principalId,
    statements,
    context,
    usageIdentifierKey: typeof usage === 'string' && usage !== '' ? usage : undefined,
  };
}

/** IAM wildcard match: `*` any run of characters, `?` one character. */
const wildcard = (pattern: string, value: string, caseInsensitive = false): boolean => {
  const source = pattern
    .split('')
    .map((char) => (char === '*' ? '.*' : char === '?' ? '.' : char.replace(/[.+^${}()|[\]\\/]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, caseInsensitive ? 'i' : '').test(value);
};

/** Deny wins over Allow; no matching statement denies. */
export function evaluatePolicy(statements: readonly Statement[], methodArn: string): Effect {
  const matching = statements.filter(
    (statement) =>
      statement.Action.some((action) => wildcard(action, 'execute-api:Invoke', true)) &&
      statement.Resource.some((resource) => wildcard(resource, methodArn)),
  );
  if (matching.some((statement) => statement.Effect === 'Deny')) return 'Deny';
  return matching.some((statement) => statement.Effect === 'Allow') ? 'Allow' : 'Deny';
}
