import { Stack, Validations } from 'aws-cdk-lib';
import { CfnPolicy, Role } from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';

/**
 * The `Resource::…` finding cdk-nag's AwsSolutions-IAM5 reports for `arn` followed
 * by `suffix`, e.g. `Resource::<JobTable1234.Arn>/index/*`. Computed from the same
 * token the grant used, so the acknowledgement names exactly one wildcard and
 * follows the resource if its logical id changes.
 */
export function iam5ResourceFinding(scope: IConstruct, arn: string, suffix: string): string {
  return `AwsSolutions-IAM5[Resource::${flattenReference(Stack.of(scope).resolve(arn))}${suffix}]`;
}

/** cdk-nag's finding for a statement granted on every resource ("*"); its id names no action. */
const IAM5_ANY_RESOURCE = 'AwsSolutions-IAM5[Resource::*]';

/**
 * Acknowledges one cdk-nag finding, with the reason recorded in code, on
 * exactly the CloudFormation resource that reports it: an L2 construct's own
 * resource, and for a role's IAM5 findings the default policy its grants land in. Nothing
 * around or under it is covered, so a finding that appears anywhere else, even
 * in another policy of the same role, is reported afresh.
 */
export function acknowledge(scope: IConstruct, id: string, reason: string): void {
  if (id === IAM5_ANY_RESOURCE) {
    throw new Error(
      `${scope.node.path}: acknowledge ${IAM5_ANY_RESOURCE} with acknowledgeActionsOnAnyResource, naming its actions`,
    );
  }
  Validations.of(findingResource(scope, id)).acknowledge({ id, reason });
}

/**
 * Acknowledges the `Resource::*` finding of a policy (a role's default policy,
 * or `scope` itself when it is a policy) for exactly `actions`: synthesis fails
 * if the policy grants any other action on "*", because the finding itself
 * names no action and would otherwise cover it silently.
 */
export function acknowledgeActionsOnAnyResource(
  scope: IConstruct,
  actions: readonly string[],
  reason: string,
): void {
  const policy = findingResource(scope, IAM5_ANY_RESOURCE);
  if (!(policy instanceof CfnPolicy)) {
    throw new Error(`${scope.node.path}: ${IAM5_ANY_RESOURCE} is acknowledged on a policy or a role`);
  }
  Validations.of(policy).acknowledge({ id: IAM5_ANY_RESOURCE, reason });
  policy.node.addValidation({
    validate: () => {
      const document = Stack.of(policy).resolve(policy.policyDocument) as {
        Statement: { Action: string | string[]; Resource: unknown }[];
      };
      const unnamed = document.Statement.filter((statement) => [statement.Resource].flat().includes('*'))
        .flatMap((statement) => [statement.Action].flat())
        .filter((action) => !actions.includes(action));
      return unnamed.length === 0
        ? []
        : [
            `${policy.node.path} grants ${unnamed.join(', ')} on "*", which its ${IAM5_ANY_RESOURCE} acknowledgement does not name`,
          ];
    },
  });
}

/**
 * The CloudFormation resource finding `id` about `scope` is reported on: a
 * role's wildcard findings (IAM5) are its default policy's, its others (IAM4,
 * managed policies) the role's own.
 */
function findingResource(scope: IConstruct, id: string): IConstruct {
  if (scope instanceof Role && id.startsWith('AwsSolutions-IAM5')) {
    const defaultPolicy = scope.node.tryFindChild('DefaultPolicy');
    if (!defaultPolicy?.node.defaultChild) {
      throw new Error(`${scope.node.path}: grant to the role before acknowledging a finding of its policy`);
    }
    return defaultPolicy.node.defaultChild;
  }
  return scope.node.defaultChild ?? scope;
}

// Mirrors cdk-nag's own flattening of CloudFormation references in finding ids.
function flattenReference(value: unknown): string {
  if (typeof value === 'string') return value.replace(/\$\{/g, '<').replace(/\}/g, '>');
  if (value && typeof value === 'object') {
    const node = value as Record<string, unknown>;
    const getAtt = node['Fn::GetAtt'];
    if (Array.isArray(getAtt)) return `<${flattenReference(getAtt[0])}.${flattenReference(getAtt[1])}>`;
    if ('Ref' in node) return `<${flattenReference(node.Ref)}>`;
    const join = node['Fn::Join'];
    if (Array.isArray(join)) {
      const [delimiter, parts] = join as [string, unknown[]];
      return parts.map(flattenReference).join(delimiter);
    }
  }
  return JSON.stringify(value);
}
