import { Template } from 'aws-cdk-lib/assertions';
import { EMBEDDING_MODEL_NAMES, EMBEDDING_MODELS } from '../../config/embedding-models';
import { loadSettings } from '../../config/settings';
import { longhaulTemplate, SYNTH_TIMEOUT_MS, stackUnderTest, standInFunction } from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

/**
 * Who may call Bedrock: a project function told of the embedding model
 * (`useEmbeddingModel`) may `bedrock:InvokeModel` on the chosen model's
 * foundation-model ARN in the stack's Region, nothing else of Bedrock; in the
 * app, the steps function (each embedding run's submit) and the API function
 * (a search's query) are, and no other role at all.
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

test.each(EMBEDDING_MODEL_NAMES)('a function told of %s may invoke that model alone', (model) => {
  const stack = stackUnderTest();
  standInFunction(stack, 'Embedder').useEmbeddingModel(loadSettings({ EMBEDDING_MODEL: model }));
  standInFunction(stack, 'Bystander');
  expect(bedrockGrants(Template.fromStack(stack))).toEqual([
    {
      path: 'Test/Embedder/Role/DefaultPolicy/Resource',
      actions: ['bedrock:InvokeModel'],
      resource: modelArn(EMBEDDING_MODELS[model].modelId),
    },
  ]);
});

// About the app: which of its functions the stack tells of the model, with the model of its settings.
test('in the Longhaul stack, the steps and API functions may invoke the default model, and only they', () => {
  const grants = bedrockGrants(longhaulTemplate());
  expect(grants.map((grant) => grant.path).sort()).toEqual([
    'Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource',
    'Longhaul/WorkflowSteps/StepsFunction/Role/DefaultPolicy/Resource',
  ]);
  for (const grant of grants) {
    expect(grant.actions).toEqual(['bedrock:InvokeModel']);
    expect(grant.resource).toEqual(modelArn(EMBEDDING_MODELS['titan-text-v2'].modelId));
  }
});
