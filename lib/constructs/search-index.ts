import { Fn, RemovalPolicy } from 'aws-cdk-lib';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { CfnIndex, CfnVectorBucket } from 'aws-cdk-lib/aws-s3vectors';
import { Construct } from 'constructs';
import { passageIndex } from '../../config/layout';
import { S3_VECTORS_LIMITS } from '../../config/s3-vectors';

/**
 * What a function may do with the index: `write` passages (and delete them);
 * `query` them; `rewrite` them, reading vectors and putting them back with new
 * metadata (a media item's metadata change); or only `delete` them (the
 * reconciler's sweeps of what failed, canceled, replaced or deleted publishes left).
 */
export type SearchIndexAccess = 'write' | 'query' | 'rewrite' | 'delete';

export interface SearchIndexProps {
  /**
   * Dimensions of every vector in the index: the embedding model's
   * (`settings.embeddingDimensions`). Fixed when the index is made.
   */
  readonly dimension: number;

  /**
   * How the index compares vectors (`settings.vectorDistanceMetric`): `cosine`
   * or `euclidean`, the two S3 Vectors offers. Fixed when the index is made.
   */
  readonly distanceMetric: string;

  /**
   * What happens to the vector bucket and its index when they leave the stack.
   * The passages of every published recording live here, and embedding them
   * again costs a Bedrock call each, so anything but RETAIN needs a deliberate choice.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The semantic index of published passages: one S3 Vectors vector bucket and
 * one float32 index in it, laid out from config/layout.ts (`passageIndex`).
 *
 * Encrypted at rest with SSE-S3 (`AES256`), as the output bucket is: the
 * passages are already served to the tenant's listeners, and a customer
 * managed KMS key would only add a key to grant each function and to keep
 * alive; IAM alone decides who reads the index.
 *
 * Neither resource is given a name: CloudFormation generates unique ones
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-s3vectors-vectorbucket.html,
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-s3vectors-index.html),
 * and the names the functions need are read back from the ARNs.
 *
 * Grants name the index's ARN alone: every data action of S3 Vectors takes the
 * index as its resource (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3vectors.html).
 */
export class SearchIndex extends Construct {
  /** The vector bucket. */
  public readonly vectorBucket: CfnVectorBucket;
  /** The passage index in it. */
  public readonly index: CfnIndex;
  /** `arn:aws:s3vectors:<region>:<account>:bucket/<name>` */
  public readonly vectorBucketArn: string;
  /** The vector bucket's generated name. */
  public readonly vectorBucketName: string;
  /** `arn:aws:s3vectors:<region>:<account>:bucket/<bucket>/index/<name>` */
  public readonly indexArn: string;
  /** The index's generated name. */
  public readonly indexName: string;

  constructor(scope: Construct, id: string, props: SearchIndexProps) {
    super(scope, id);
    const { minDimension, maxDimension } = S3_VECTORS_LIMITS;
    if (
      !Number.isInteger(props.dimension) ||
      props.dimension < minDimension ||
      props.dimension > maxDimension
    ) {
      throw new Error(
        `SearchIndex ${this.node.path}: dimension must be an integer from ${minDimension} to ${maxDimension}, got ${props.dimension}`,
      );
    }
    if (props.distanceMetric !== 'cosine' && props.distanceMetric !== 'euclidean') {
      throw new Error(
        `SearchIndex ${this.node.path}: distanceMetric must be cosine or euclidean, got ${props.distanceMetric}`,
      );
    }
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    this.vectorBucket = new CfnVectorBucket(this, 'VectorBucket', {
      // SSE-S3 is the service's default too; stated so the template shows what protects the data.
      encryptionConfiguration: { sseType: 'AES256' },
    });
    this.vectorBucket.applyRemovalPolicy(removalPolicy);
    this.vectorBucketArn = this.vectorBucket.attrVectorBucketArn;

    this.index = new CfnIndex(this, 'Index', {
      vectorBucketArn: this.vectorBucketArn,
      dataType: 'float32',
      dimension: props.dimension,
      distanceMetric: props.distanceMetric,
      metadataConfiguration: { nonFilterableMetadataKeys: [...passageIndex.nonFilterableMetadataKeys] },
    });
    this.index.applyRemovalPolicy(removalPolicy);
    this.indexArn = this.index.attrIndexArn;

    // `…:bucket/<bucket>` and `…:bucket/<bucket>/index/<index>`: the names are the ARN's path segments.
    this.vectorBucketName = Fn.select(1, Fn.split('/', this.vectorBucketArn));
    this.indexName = Fn.select(3, Fn.split('/', this.indexArn));
  }

  /**
   * Lets `grantee` write passages' vectors and delete them: PutVectors (which
   * also replaces a vector of the same key) and DeleteVectors. A recording's
   * keys are derived from its passages (`<tenant>/<job>/<passage>`), so its
   * vectors are deleted by key, without listing or reading the index.
   */
  public grantWrite(grantee: IGrantable): Grant {
    return this.grant(grantee, 's3vectors:PutVectors', 's3vectors:DeleteVectors');
  }

  /**
   * Lets `grantee` search the index with a metadata filter and read the hits'
   * metadata: QueryVectors, and GetVectors, which S3 Vectors requires besides
   * as soon as a query filters or returns metadata
   * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_S3VectorBuckets_QueryVectors.html).
   */
  public grantQuery(grantee: IGrantable): Grant {
    return this.grant(grantee, 's3vectors:QueryVectors', 's3vectors:GetVectors');
  }

  /** Grants `access` (see {@link SearchIndexAccess}). */
  public grantAccess(grantee: IGrantable, access: SearchIndexAccess): Grant {
    switch (access) {
      case 'write':
        return this.grantWrite(grantee);
      case 'query':
        return this.grantQuery(grantee);
      case 'rewrite':
        // GetVectors with its data, then PutVectors of the same keys and data with new metadata.
        return this.grant(grantee, 's3vectors:GetVectors', 's3vectors:PutVectors');
      case 'delete':
        return this.grant(grantee, 's3vectors:DeleteVectors');
    }
  }

  private grant(grantee: IGrantable, ...actions: string[]): Grant {
    return Grant.addToPrincipal({ grantee, actions, resourceArns: [this.indexArn] });
  }
}
