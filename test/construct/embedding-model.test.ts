import type { Template } from 'aws-cdk-lib/assertions';
import { EMBEDDING_MODELS } from '../../config/embedding-models';
import { longhaulTemplate, SYNTH_TIMEOUT_MS } from './longhaul-app';

/**
 * Who may call Bedrock: the steps function (each embedding run's submit) and
 * the API function (a search's query), `bedrock:InvokeModel` on the chosen
 * model's foundation-model ARN in the stack's Region, nothing else of Bedrock,
 * and no other role at all.
 */

const bedrockGrants = (template: Template) =>
  Object.values(template.findResources('AWS::IAM::Policy')).flatMap((policy) =>
    (policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[])
      .filter((statement) => [statement.Action].flat().some((action) => action.startsWith('bedrock:')))
      .map((statement) => ({
        path: policy.Metadata?.['aws:cdk:path'] as string,
        actions: [statement.Action].flat(),
        resource: statement.Resource,
      })),
  );

const modelArn = (modelId: string) => ({
  'Fn::Join': [
    '',
    ['arn:', { Ref: 'AWS::Partition' }, ':bedrock:', { Ref: 'AWS::Region' }, `::foundation-model/${modelId}`],
  ],
});

describe.each([
  ['titan-text-v2', {}],
  ['cohere-multilingual-v3', { EMBEDDING_MODEL: 'cohere-multilingual-v3' }],
] as const)('with %s', (model, env) => {
  let template: Template;
  beforeAll(() => {
    template = longhaulTemplate(env);
  }, SYNTH_TIMEOUT_MS);

  test('the steps and API functions may invoke that model, and only they', () => {
    const grants = bedrockGrants(template);
    expect(grants.map((grant) => grant.path).sort()).toEqual([
      'Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource',
      'Longhaul/WorkflowSteps/StepsFunction/Role/DefaultPolicy/Resource',
    ]);
    for (const grant of grants) {
      expect(grant.actions).toEqual(['bedrock:InvokeModel']);
      expect(grant.resource).toEqual(modelArn(EMBEDDING_MODELS[model].modelId));
    }
  });
});
