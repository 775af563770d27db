import { Stack, Validations } from 'aws-cdk-lib';
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

/** Acknowledges one cdk-nag finding on `scope` and everything under it, with the reason recorded in code. */
export function acknowledge(scope: IConstruct, id: string, reason: string): void {
  Validations.of(scope).acknowledge({ id, reason });
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
