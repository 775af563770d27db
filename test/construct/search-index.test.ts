import { RemovalPolicy, type Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { resourceEnv } from '../../config/layout';
import { defaultSettings } from '../../config/settings';
import {
  SearchIndex,
  type SearchIndexAccess,
  type SearchIndexProps,
} from '../../lib/constructs/search-index';
import {
  grantsOn,
  logicalIdAt,
  longhaulTemplate,
  policyStatements,
  SYNTH_TIMEOUT_MS,
  stackUnderTest,
  standInFunction,
} from './longhaul-app';

jest.setTimeout(SYNTH_TIMEOUT_MS);

/** The construct alone in a stack of its own; `extend` adds what a test grants to. */
function build(
  props: Partial<SearchIndexProps> = {},
  extend: (stack: Stack, index: SearchIndex) => void = () => undefined,
) {
  const stack = stackUnderTest();
  const index = new SearchIndex(stack, 'SearchIndex', {
    dimension: 1024,
    distanceMetric: 'cosine',
    ...props,
  });
  extend(stack, index);
  const template = Template.fromStack(stack);
  const ids = {
    bucket: logicalIdAt(template, 'AWS::S3Vectors::VectorBucket', 'Test/SearchIndex/VectorBucket'),
    index: logicalIdAt(template, 'AWS::S3Vectors::Index', 'Test/SearchIndex/Index'),
  };
  return { stack, index, template, ids };
}

describe('the vector bucket', () => {
  test('is encrypted with SSE-S3, named by CloudFormation, and retained', () => {
    const { template, ids } = build();
    template.hasResource('AWS::S3Vectors::VectorBucket', {
      Properties: { EncryptionConfiguration: { SseType: 'AES256' }, VectorBucketName: Match.absent() },
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
    expect(Object.keys(template.findResources('AWS::S3Vectors::VectorBucket'))).toEqual([ids.bucket]);
  });

  test('is removed with the stack only when asked', () => {
    build({ removalPolicy: RemovalPolicy.DESTROY }).template.hasResource('AWS::S3Vectors::VectorBucket', {
      DeletionPolicy: 'Delete',
    });
  });
});

describe('the index', () => {
  test('is one float32 index in the bucket, with the dimension and metric given and text and title non-filterable', () => {
    const { template, ids } = build();
    template.hasResource('AWS::S3Vectors::Index', {
      Properties: {
        VectorBucketArn: { 'Fn::GetAtt': [ids.bucket, 'VectorBucketArn'] },
        DataType: 'float32',
        Dimension: 1024,
        DistanceMetric: 'cosine',
        MetadataConfiguration: { NonFilterableMetadataKeys: ['text', 'title'] },
        IndexName: Match.absent(),
        VectorBucketName: Match.absent(),
        EncryptionConfiguration: Match.absent(),
      },
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
    expect(Object.keys(template.findResources('AWS::S3Vectors::Index'))).toEqual([ids.index]);
  });

  test('takes another dimension and the euclidean metric', () => {
    build({ dimension: 256, distanceMetric: 'euclidean' }).template.hasResourceProperties(
      'AWS::S3Vectors::Index',
      { Dimension: 256, DistanceMetric: 'euclidean' },
    );
  });

  test('exposes its ARNs, and names read back from them', () => {
    const { stack, index, ids } = build();
    const indexArn = { 'Fn::GetAtt': [ids.index, 'IndexArn'] };
    const bucketArn = { 'Fn::GetAtt': [ids.bucket, 'VectorBucketArn'] };
    expect(stack.resolve(index.indexArn)).toEqual(indexArn);
    expect(stack.resolve(index.vectorBucketArn)).toEqual(bucketArn);
    expect(stack.resolve(index.indexName)).toEqual({ 'Fn::Select': [3, { 'Fn::Split': ['/', indexArn] }] });
    expect(stack.resolve(index.vectorBucketName)).toEqual({
      'Fn::Select': [1, { 'Fn::Split': ['/', bucketArn] }],
    });
  });
});

describe('grants', () => {
  // The app's feature flags sort a statement's actions.
  test.each<[SearchIndexAccess, string | string[]]>([
    ['write', ['s3vectors:DeleteVectors', 's3vectors:PutVectors']],
    // A filtered query with metadata needs GetVectors too.
    ['query', ['s3vectors:GetVectors', 's3vectors:QueryVectors']],
    ['rewrite', ['s3vectors:GetVectors', 's3vectors:PutVectors']],
    ['delete', 's3vectors:DeleteVectors'],
  ])('%s: %j on the index alone', (access, actions) => {
    const { template, ids } = build({}, (stack, index) => {
      index.grantAccess(
        new Role(stack, 'Grantee', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') }),
        access,
      );
    });
    expect(policyStatements(template, 'Test/Grantee/DefaultPolicy/Resource')).toEqual([
      {
        Effect: 'Allow',
        Action: actions,
        Resource: { 'Fn::GetAtt': [ids.index, 'IndexArn'] },
      },
    ]);
  });

  test('a project function grants and learns the names in one call', () => {
    const { stack, index, ids, template } = build({}, (scope, searchIndex) => {
      standInFunction(scope, 'Fn').useSearchIndex(searchIndex, 'query');
    });
    const fn =
      template.toJSON().Resources[
        logicalIdAt(template, 'AWS::Lambda::Function', 'Test/Fn/Function/Resource')
      ];
    expect(fn.Properties.Environment.Variables).toEqual(
      expect.objectContaining({
        [resourceEnv.vectorBucketName]: stack.resolve(index.vectorBucketName),
        [resourceEnv.vectorIndexName]: stack.resolve(index.indexName),
      }),
    );
    expect(grantsOn(policyStatements(template, 'Test/Fn/Role/DefaultPolicy/Resource'), ids.index)).toEqual([
      ['s3vectors:GetVectors', { 'Fn::GetAtt': [ids.index, 'IndexArn'] }],
      ['s3vectors:QueryVectors', { 'Fn::GetAtt': [ids.index, 'IndexArn'] }],
    ]);
  });
});

describe('props', () => {
  test.each([0, 4097, 1.5])('rejects dimension %s', (dimension) => {
    expect(() => build({ dimension })).toThrow(
      `SearchIndex Test/SearchIndex: dimension must be an integer from 1 to 4096, got ${dimension}`,
    );
  });

  test('rejects a metric S3 Vectors does not offer', () => {
    expect(() => build({ distanceMetric: 'dotproduct' })).toThrow(
      'SearchIndex Test/SearchIndex: distanceMetric must be cosine or euclidean, got dotproduct',
    );
  });
});

// About the app: which of its functions the stack gives which access, and its output.
describe('in the Longhaul stack', () => {
  test('the workflow steps write, the reconciler deletes, the API queries and rewrites metadata, each on the one index and nothing else of S3 Vectors; its ARN is an output', () => {
    const template = longhaulTemplate();
    const settings = defaultSettings;
    const indexId = logicalIdAt(template, 'AWS::S3Vectors::Index', 'Longhaul/SearchIndex/Index');
    template.hasResourceProperties('AWS::S3Vectors::Index', {
      Dimension: settings.embeddingDimensions,
      DistanceMetric: settings.vectorDistanceMetric,
    });
    const s3vectorsGrants = (path: string) =>
      policyStatements(template, path)
        .flatMap((statement) =>
          [statement.Action].flat().map((action): [string, unknown] => [action, statement.Resource]),
        )
        .filter(([action]) => action.startsWith('s3vectors:'));
    const indexArn = { 'Fn::GetAtt': [indexId, 'IndexArn'] };
    // The stack's feature flags merge and sort statements: compared as sets of pairs.
    expect(
      s3vectorsGrants('Longhaul/WorkflowSteps/StepsFunction/Role/DefaultPolicy/Resource').sort(),
    ).toEqual([
      ['s3vectors:DeleteVectors', indexArn],
      // A new version's switch rewrites its vectors' metadata when the item changed meanwhile.
      ['s3vectors:GetVectors', indexArn],
      ['s3vectors:PutVectors', indexArn],
    ]);
    // Search, and a media item's metadata change, which puts its vectors back with their own data.
    expect(s3vectorsGrants('Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource').sort()).toEqual([
      ['s3vectors:GetVectors', indexArn],
      ['s3vectors:PutVectors', indexArn],
      ['s3vectors:QueryVectors', indexArn],
    ]);
    template.hasOutput('SearchIndexArn', { Value: indexArn });
    // Nobody else reaches the index.
    const others = Object.entries(template.findResources('AWS::IAM::Policy'))
      .filter(([, policy]) => JSON.stringify(policy.Properties.PolicyDocument).includes('s3vectors:'))
      .map(([, policy]) => policy.Metadata['aws:cdk:path']);
    expect(others.sort()).toEqual([
      'Longhaul/Api/ApiFunction/Role/DefaultPolicy/Resource',
      'Longhaul/Reconciler/ReconcileFunction/Role/DefaultPolicy/Resource',
      'Longhaul/WorkflowSteps/StepsFunction/Role/DefaultPolicy/Resource',
    ]);
    // The reconciler's orphan sweep only removes what a failed or canceled publish left.
    expect(s3vectorsGrants('Longhaul/Reconciler/ReconcileFunction/Role/DefaultPolicy/Resource')).toEqual([
      ['s3vectors:DeleteVectors', indexArn],
    ]);
  });
});
