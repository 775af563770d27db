import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { Settings } from '../config/settings';
import { writeFileAtomically } from './data-dir';

/**
 * The CloudFormation template of the deployed stack, as the local stack reads
 * it: every deployment fact the local stack reproduces (function timeouts and
 * memory, the event source mapping, throttles, tables, queues, IAM policies)
 * comes from here, so the local stack runs what AWS would, never a copy of it.
 *
 * The template is synthesized from lib/ exactly as bin/longhaul.ts builds the
 * app, with the local stack's settings, but without bundling the handlers (the
 * local stack runs their sources). A synthesis takes seconds, so the template
 * is kept on disk under a hash of everything it depends on; end-to-end tests
 * that start many stacks pay for one synthesis.
 *
 * `LONGHAUL_TEMPLATE` names a template file to read instead, which is how a
 * test runs the local stack against a doctored template (a grant removed).
 */

/** Names a template file the local stack reads instead of synthesizing one. */
export const TEMPLATE_ENV = 'LONGHAUL_TEMPLATE';

const REPO_ROOT = join(__dirname, '..');
/** What a synthesis reads besides the settings; a change to any of these is a new template. */
const SOURCES = ['lib', 'config', 'cdk.json', 'package-lock.json', relative(REPO_ROOT, __filename)];
const CACHE_DIR = join(REPO_ROOT, 'cdk.out', 'local-templates');
const STACK_NAME = 'Longhaul';

export interface CfnResource {
  readonly Type: string;
  readonly Properties?: Readonly<Record<string, unknown>>;
  readonly Metadata?: Readonly<Record<string, unknown>>;
}

export interface TemplateJson {
  readonly Resources: Readonly<Record<string, CfnResource>>;
}

/** A policy document as the template holds it: ARNs may still be intrinsics (`Fn::GetAtt`, `Ref`, `Fn::Join`). */
export interface PolicyDocumentJson {
  readonly Version?: string;
  readonly Statement: readonly Readonly<Record<string, unknown>>[];
}

export interface FunctionFacts {
  readonly logicalId: string;
  /** The function's Powertools service name (`api`, `dispatch`, …): how the local stack tells functions apart. */
  readonly service: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  /** `ReservedConcurrentExecutions`; absent when the function reserves none. */
  readonly reservedConcurrency?: number;
  /** What Lambda does with a recursive loop through this function; `Terminate` unless the template allows it. */
  readonly recursiveLoop: 'Allow' | 'Terminate';
  readonly roleLogicalId: string;
  /** The function's environment as the template holds it: values may be intrinsics. */
  readonly environment: Readonly<Record<string, unknown>>;
}

export interface EventSourceMappingFacts {
  readonly logicalId: string;
  readonly functionLogicalId: string;
  /** The queue (or stream) the mapping reads. */
  readonly sourceLogicalId: string;
  readonly batchSize: number;
  /** `ScalingConfig.MaximumConcurrency`; absent when the mapping sets none. */
  readonly maximumConcurrency?: number;
  readonly maximumBatchingWindowSeconds: number;
  readonly reportBatchItemFailures: boolean;
  readonly enabled: boolean;
}

export interface KeyFacts {
  readonly partitionKey: string;
  readonly sortKey?: string;
}

export interface TableFacts extends KeyFacts {
  readonly logicalId: string;
  /** Type (`S`, `N`, `B`) of every key attribute of the table and its indexes. */
  readonly attributeTypes: Readonly<Record<string, string>>;
  readonly indexes: readonly (KeyFacts & { readonly name: string; readonly projection: string })[];
  readonly timeToLiveAttribute?: string;
}

export interface QueueFacts {
  readonly logicalId: string;
  readonly visibilityTimeoutSeconds: number;
  readonly delaySeconds: number;
  readonly messageRetentionSeconds: number;
  readonly receiveMessageWaitSeconds: number;
  readonly redrive?: { readonly deadLetterLogicalId: string; readonly maxReceiveCount: number };
}

/** A Lambda function URL (`AWS::Lambda::Url`) and the function it invokes. */
export interface FunctionUrlFacts {
  readonly logicalId: string;
  readonly functionLogicalId: string;
  /** The invoked function's Powertools service name. */
  readonly service: string;
  readonly authType: 'NONE' | 'AWS_IAM';
  /** How the response goes back: whole (`BUFFERED`, the default) or streamed. */
  readonly invokeMode: 'BUFFERED' | 'RESPONSE_STREAM';
  /** The environment variables of any function that the template sets to this URL (`Fn::GetAtt … FunctionUrl`). */
  readonly variables: readonly string[];
}

/** An S3 Vectors index (`AWS::S3Vectors::Index`) and the vector bucket (`AWS::S3Vectors::VectorBucket`) it is in. */
export interface VectorIndexFacts {
  readonly logicalId: string;
  readonly bucketLogicalId: string;
  readonly dataType: string;
  readonly dimension: number;
  readonly distanceMetric: string;
  /** Empty when the index names none: every key is filterable. */
  readonly nonFilterableMetadataKeys: readonly string[];
  /** The bucket's encryption, as CreateVectorBucket takes it; absent: the service's default (SSE-S3). */
  readonly bucketEncryption?: { readonly sseType: string; readonly kmsKeyArn?: string };
}

export interface ThrottleFacts {
  readonly rateLimit: number;
  readonly burstLimit: number;
}

type Json = Readonly<Record<string, unknown>>;

/** Typed reads of the synthesized template. Every accessor throws, naming what is missing, rather than guess. */
export class LocalTemplate {
  constructor(
    readonly json: TemplateJson,
    /** Where it was read from, for messages. */
    readonly source: string,
  ) {}

  /** Logical ids and resources of one CloudFormation type. */
  resourcesOfType(type: string): [string, CfnResource][] {
    return Object.entries(this.json.Resources).filter(([, resource]) => resource.Type === type);
  }

  resource(logicalId: string, type?: string): CfnResource {
    const found = this.json.Resources[logicalId];
    if (!found || (type !== undefined && found.Type !== type)) {
      throw new Error(`${this.source} has no ${type ?? 'resource'} ${logicalId}`);
    }
    return found;
  }

  functions(): FunctionFacts[] {
    return this.resourcesOfType('AWS::Lambda::Function').map(([logicalId, resource]) => {
      const props = resource.Properties ?? {};
      const environment = ((props.Environment as Json | undefined)?.Variables ?? {}) as Json;
      const service = environment.POWERTOOLS_SERVICE_NAME;
      if (typeof service !== 'string') {
        throw new Error(`${this.source}: function ${logicalId} has no POWERTOOLS_SERVICE_NAME`);
      }
      return {
        logicalId,
        service,
        // CloudFormation's defaults when a property is absent.
        timeoutSeconds: typeof props.Timeout === 'number' ? props.Timeout : 3,
        memoryMb: typeof props.MemorySize === 'number' ? props.MemorySize : 128,
        ...(typeof props.ReservedConcurrentExecutions === 'number'
          ? { reservedConcurrency: props.ReservedConcurrentExecutions }
          : {}),
        recursiveLoop: props.RecursiveLoop === 'Allow' ? 'Allow' : 'Terminate',
        roleLogicalId: getAttTarget(props.Role, `${logicalId}.Role`),
        environment,
      };
    });
  }

  /**
   * Every function URL, with the function it invokes and the variables
   * through which functions are told it (a provider's webhook URL is made of
   * one).
   */
  functionUrls(): FunctionUrlFacts[] {
    const functions = this.functions();
    return this.resourcesOfType('AWS::Lambda::Url').map(([logicalId, resource]) => {
      const props = resource.Properties ?? {};
      if (props.Qualifier !== undefined) {
        throw new Error(`${this.source}: function URL ${logicalId} has a qualifier, which is not emulated`);
      }
      const functionLogicalId = getAttTarget(props.TargetFunctionArn, `${logicalId}.TargetFunctionArn`);
      const target = functions.find((fn) => fn.logicalId === functionLogicalId);
      if (!target)
        throw new Error(`${this.source}: function URL ${logicalId} names no function of the template`);
      const authType = props.AuthType;
      if (authType !== 'NONE' && authType !== 'AWS_IAM') {
        throw new Error(`${this.source}: function URL ${logicalId} has no AuthType`);
      }
      const variables = new Set<string>();
      for (const fn of functions) {
        for (const [variable, value] of Object.entries(fn.environment)) {
          const att = (value as { 'Fn::GetAtt'?: unknown } | null)?.['Fn::GetAtt'];
          if (Array.isArray(att) && att[0] === logicalId && att[1] === 'FunctionUrl') variables.add(variable);
        }
      }
      return {
        logicalId,
        functionLogicalId,
        service: target.service,
        authType,
        invokeMode: props.InvokeMode === 'RESPONSE_STREAM' ? 'RESPONSE_STREAM' : 'BUFFERED',
        variables: [...variables].sort(),
      };
    });
  }

  /** The name of the one EventBridge Scheduler schedule group, where tenants' schedules live. */
  scheduleGroupName(): string {
    const groups = this.resourcesOfType('AWS::Scheduler::ScheduleGroup');
    const name = groups[0]?.[1].Properties?.Name;
    if (groups.length !== 1 || typeof name !== 'string') {
      throw new Error(`${this.source}: expected one schedule group with a Name, found ${groups.length}`);
    }
    return name;
  }

  /** The name of the EventBridge bus `logicalId` (`AWS::Events::EventBus`), which the template fixes. */
  eventBusName(logicalId: string): string {
    const name = this.resource(logicalId, 'AWS::Events::EventBus').Properties?.Name;
    if (typeof name !== 'string') throw new Error(`${this.source}: event bus ${logicalId} has no Name`);
    return name;
  }

  /** The function whose Powertools service name is `service`. */
  function(service: string): FunctionFacts {
    const matches = this.functions().filter((fn) => fn.service === service);
    if (matches.length !== 1) {
      throw new Error(`${this.source}: expected one function of service ${service}, found ${matches.length}`);
    }
    return matches[0] as FunctionFacts;
  }

  /** Every event source mapping that invokes the function of `service`; at least one. */
  eventSourceMappings(service: string): EventSourceMappingFacts[] {
    const fn = this.function(service);
    const mappings = this.resourcesOfType('AWS::Lambda::EventSourceMapping').filter(
      ([, resource]) => refTarget(resource.Properties?.FunctionName) === fn.logicalId,
    );
    if (mappings.length === 0) {
      throw new Error(`${this.source}: expected an event source mapping of ${service}, found none`);
    }
    return mappings.map(([logicalId, resource]) => {
      const props = resource.Properties ?? {};
      const scaling = props.ScalingConfig as Json | undefined;
      return {
        logicalId,
        functionLogicalId: fn.logicalId,
        sourceLogicalId: getAttTarget(props.EventSourceArn, `${logicalId}.EventSourceArn`),
        // Lambda's default for SQS.
        batchSize: typeof props.BatchSize === 'number' ? props.BatchSize : 10,
        ...(typeof scaling?.MaximumConcurrency === 'number'
          ? { maximumConcurrency: scaling.MaximumConcurrency }
          : {}),
        maximumBatchingWindowSeconds:
          typeof props.MaximumBatchingWindowInSeconds === 'number' ? props.MaximumBatchingWindowInSeconds : 0,
        reportBatchItemFailures: ((props.FunctionResponseTypes as unknown[] | undefined) ?? []).includes(
          'ReportBatchItemFailures',
        ),
        enabled: props.Enabled !== false,
      };
    });
  }

  /**
   * The resource a function's environment variable points at (`Ref` or
   * `Fn::GetAtt`): the handlers find their tables, queues and buckets by these
   * variables, so they are what ties a local resource to its template resource.
   */
  resourceOfVariable(variable: string): string {
    const targets = new Set<string>();
    for (const fn of this.functions()) {
      const value = fn.environment[variable];
      if (value !== undefined) targets.add(intrinsicTarget(value, `${fn.logicalId}.${variable}`));
    }
    if (targets.size !== 1) {
      throw new Error(
        `${this.source}: expected the functions' ${variable} to name one resource, found ${targets.size}`,
      );
    }
    return [...targets][0] as string;
  }

  table(logicalId: string): TableFacts {
    const props = this.resource(logicalId, 'AWS::DynamoDB::Table').Properties ?? {};
    const keys = (schema: unknown): KeyFacts => {
      const elements = (schema ?? []) as { AttributeName: string; KeyType: string }[];
      const partitionKey = elements.find((e) => e.KeyType === 'HASH')?.AttributeName;
      if (partitionKey === undefined)
        throw new Error(`${this.source}: table ${logicalId} has a key with no HASH`);
      const sortKey = elements.find((e) => e.KeyType === 'RANGE')?.AttributeName;
      return { partitionKey, ...(sortKey === undefined ? {} : { sortKey }) };
    };
    const definitions = (props.AttributeDefinitions ?? []) as {
      AttributeName: string;
      AttributeType: string;
    }[];
    const indexes = (props.GlobalSecondaryIndexes ?? []) as {
      IndexName: string;
      KeySchema: unknown;
      Projection?: { ProjectionType?: string };
    }[];
    const ttl = props.TimeToLiveSpecification as { AttributeName?: string; Enabled?: boolean } | undefined;
    return {
      logicalId,
      ...keys(props.KeySchema),
      attributeTypes: Object.fromEntries(definitions.map((d) => [d.AttributeName, d.AttributeType])),
      indexes: indexes.map((index) => ({
        name: index.IndexName,
        ...keys(index.KeySchema),
        projection: index.Projection?.ProjectionType ?? 'KEYS_ONLY',
      })),
      ...(ttl?.Enabled && ttl.AttributeName ? { timeToLiveAttribute: ttl.AttributeName } : {}),
    };
  }

  vectorIndex(logicalId: string): VectorIndexFacts {
    const props = this.resource(logicalId, 'AWS::S3Vectors::Index').Properties ?? {};
    const bucketLogicalId =
      props.VectorBucketArn !== undefined
        ? getAttTarget(props.VectorBucketArn, `${logicalId}.VectorBucketArn`)
        : refTarget(props.VectorBucketName);
    if (bucketLogicalId === undefined) {
      throw new Error(
        `${this.source}: index ${logicalId} names its vector bucket by neither ARN nor reference`,
      );
    }
    const bucket = this.resource(bucketLogicalId, 'AWS::S3Vectors::VectorBucket').Properties ?? {};
    const { DataType: dataType, Dimension: dimension, DistanceMetric: distanceMetric } = props;
    if (typeof dataType !== 'string' || typeof dimension !== 'number' || typeof distanceMetric !== 'string') {
      throw new Error(`${this.source}: index ${logicalId} lacks its DataType, Dimension or DistanceMetric`);
    }
    const metadata = props.MetadataConfiguration as { NonFilterableMetadataKeys?: string[] } | undefined;
    const encryption = bucket.EncryptionConfiguration as { SseType?: string; KmsKeyArn?: string } | undefined;
    if (props.EncryptionConfiguration !== undefined) {
      throw new Error(
        `${this.source}: index ${logicalId} has an encryption of its own, which is not emulated`,
      );
    }
    return {
      logicalId,
      bucketLogicalId,
      dataType,
      dimension,
      distanceMetric,
      nonFilterableMetadataKeys: metadata?.NonFilterableMetadataKeys ?? [],
      ...(encryption?.SseType
        ? {
            bucketEncryption: {
              sseType: encryption.SseType,
              ...(typeof encryption.KmsKeyArn === 'string' ? { kmsKeyArn: encryption.KmsKeyArn } : {}),
            },
          }
        : {}),
    };
  }

  queue(logicalId: string): QueueFacts {
    const props = this.resource(logicalId, 'AWS::SQS::Queue').Properties ?? {};
    const number = (value: unknown, fallback: number) => (typeof value === 'number' ? value : fallback);
    const redrive = props.RedrivePolicy as
      | { deadLetterTargetArn?: unknown; maxReceiveCount?: number }
      | undefined;
    return {
      logicalId,
      // SQS's defaults when a property is absent.
      visibilityTimeoutSeconds: number(props.VisibilityTimeout, 30),
      delaySeconds: number(props.DelaySeconds, 0),
      messageRetentionSeconds: number(props.MessageRetentionPeriod, 345_600),
      receiveMessageWaitSeconds: number(props.ReceiveMessageWaitTimeSeconds, 0),
      ...(redrive
        ? {
            redrive: {
              deadLetterLogicalId: getAttTarget(redrive.deadLetterTargetArn, `${logicalId}.RedrivePolicy`),
              maxReceiveCount: number(redrive.maxReceiveCount, 10),
            },
          }
        : {}),
    };
  }

  /**
   * The REST API's throttles: the stage's limit across all clients, and the
   * usage plan's per-key limit. The template has one of each.
   */
  restApiThrottles(): { readonly stage: ThrottleFacts; readonly usagePlan: ThrottleFacts } {
    const [, stage] = this.one('AWS::ApiGateway::Stage');
    const settings = ((stage.Properties?.MethodSettings ?? []) as Json[]).find(
      (s) => s.HttpMethod === '*' && s.ResourcePath === '/*',
    );
    const [, plan] = this.one('AWS::ApiGateway::UsagePlan');
    const throttle = plan.Properties?.Throttle as Json | undefined;
    return {
      stage: this.throttle(settings?.ThrottlingRateLimit, settings?.ThrottlingBurstLimit, 'the stage'),
      usagePlan: this.throttle(throttle?.RateLimit, throttle?.BurstLimit, 'the usage plan'),
    };
  }

  /** The WebSocket API stage's default route throttle. */
  webSocketThrottle(): ThrottleFacts {
    const [, stage] = this.one('AWS::ApiGatewayV2::Stage');
    const route = stage.Properties?.DefaultRouteSettings as Json | undefined;
    return this.throttle(route?.ThrottlingRateLimit, route?.ThrottlingBurstLimit, 'the WebSocket stage');
  }

  /** Every identity policy attached to the function's role, inline and as `AWS::IAM::Policy`, unresolved. */
  rolePolicies(service: string): PolicyDocumentJson[] {
    return this.policiesOfRole(this.function(service).roleLogicalId);
  }

  /** Every identity policy attached to the role `roleId`, inline and as `AWS::IAM::Policy`, unresolved. */
  policiesOfRole(roleId: string): PolicyDocumentJson[] {
    const role = this.resource(roleId, 'AWS::IAM::Role').Properties ?? {};
    if (((role.ManagedPolicyArns as unknown[] | undefined) ?? []).length > 0) {
      // Their documents are not in the template; evaluating without them would deny what AWS allows.
      throw new Error(
        `${this.source}: role ${roleId} has managed policies, which the local stack cannot read`,
      );
    }
    const inline = ((role.Policies ?? []) as { PolicyDocument: PolicyDocumentJson }[]).map(
      (p) => p.PolicyDocument,
    );
    const attached = this.resourcesOfType('AWS::IAM::Policy')
      .filter(([, policy]) =>
        ((policy.Properties?.Roles ?? []) as unknown[]).some((r) => refTarget(r) === roleId),
      )
      .map(([, policy]) => policy.Properties?.PolicyDocument as PolicyDocumentJson);
    return [...inline, ...attached];
  }

  /** The one state machine's logical id and `DefinitionString`, unresolved. */
  stateMachine(): { readonly logicalId: string; readonly definitionString: unknown } {
    const [logicalId, machine] = this.one('AWS::StepFunctions::StateMachine');
    return { logicalId, definitionString: machine.Properties?.DefinitionString };
  }

  /** The one WebSocket API stage's name. */
  webSocketStageName(): string {
    const [, stage] = this.one('AWS::ApiGatewayV2::Stage');
    const name = stage.Properties?.StageName;
    if (typeof name !== 'string') throw new Error(`${this.source}: the WebSocket stage has no name`);
    return name;
  }

  private one(type: string): [string, CfnResource] {
    const found = this.resourcesOfType(type);
    if (found.length !== 1) throw new Error(`${this.source}: expected one ${type}, found ${found.length}`);
    return found[0] as [string, CfnResource];
  }

  private throttle(rate: unknown, burst: unknown, what: string): ThrottleFacts {
    if (typeof rate !== 'number' || typeof burst !== 'number') {
      throw new Error(`${this.source}: ${what} sets no throttling rate and burst`);
    }
    return { rateLimit: rate, burstLimit: burst };
  }
}

/** The logical id a `Ref` names, or undefined. */
export function refTarget(value: unknown): string | undefined {
  const ref = (value as { Ref?: unknown } | null)?.Ref;
  return typeof ref === 'string' ? ref : undefined;
}

export function getAttTarget(value: unknown, where: string): string {
  const att = (value as { 'Fn::GetAtt'?: unknown } | null)?.['Fn::GetAtt'];
  if (Array.isArray(att) && typeof att[0] === 'string') return att[0];
  throw new Error(`${where} is not an Fn::GetAtt: ${JSON.stringify(value)}`);
}

/**
 * The resource a `Ref` or `Fn::GetAtt` names, also when only a part of it is
 * taken: `Fn::Select` of its `Fn::Split` (a name read off an ARN).
 */
function intrinsicTarget(value: unknown, where: string): string {
  const select = (value as { 'Fn::Select'?: unknown } | null)?.['Fn::Select'];
  const split = Array.isArray(select)
    ? (select[1] as { 'Fn::Split'?: unknown } | null)?.['Fn::Split']
    : undefined;
  if (Array.isArray(split)) return intrinsicTarget(split[1], where);
  return refTarget(value) ?? getAttTarget(value, where);
}

/** Every file under `path` (or `path` itself), sorted, relative to the repository. */
function sourceFiles(path: string): string[] {
  const absolute = join(REPO_ROOT, path);
  if (!statSync(absolute).isDirectory()) return [path];
  return readdirSync(absolute, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(REPO_ROOT, join(entry.parentPath, entry.name)))
    .sort();
}

/** The cache key: the sources a synthesis reads and the settings it runs with. */
export function templateKey(settings: Settings): string {
  const hash = createHash('sha256');
  for (const file of SOURCES.flatMap(sourceFiles)) {
    hash
      .update(`${file}\0`)
      .update(readFileSync(join(REPO_ROOT, file)))
      .update('\0');
  }
  hash.update(JSON.stringify(Object.entries(settings).sort(([a], [b]) => a.localeCompare(b))));
  return hash.digest('hex').slice(0, 32);
}

/**
 * The path of the template synthesized with `settings`, synthesizing it when
 * the cache has none for the current sources. Tests copy it to doctor it.
 */
export function synthesizedTemplatePath(settings: Settings): string {
  const file = join(CACHE_DIR, `${templateKey(settings)}.template.json`);
  if (existsSync(file)) return file;
  mkdirSync(CACHE_DIR, { recursive: true });
  writeFileAtomically(file, `${JSON.stringify(synthesize(settings), null, 1)}\n`);
  return file;
}

/** The template the local stack runs: `LONGHAUL_TEMPLATE`'s file when set, else the synthesized one. */
export function loadTemplate(
  settings: Settings,
  env: Readonly<Record<string, string | undefined>> = process.env,
): LocalTemplate {
  const file = env[TEMPLATE_ENV]?.trim() || synthesizedTemplatePath(settings);
  const json = JSON.parse(readFileSync(file, 'utf8')) as TemplateJson;
  if (typeof json?.Resources !== 'object') throw new Error(`${file} is not a CloudFormation template`);
  return new LocalTemplate(json, file);
}

function synthesize(settings: Settings): TemplateJson {
  // Loaded only on a cache miss: aws-cdk-lib takes seconds to load.
  const { App } = require('aws-cdk-lib') as typeof import('aws-cdk-lib');
  const { LonghaulStack } = require('../lib/longhaul-stack') as typeof import('../lib/longhaul-stack');
  const cdkJson = JSON.parse(readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8')) as {
    context?: Record<string, unknown>;
  };
  const outdir = mkdtempSync(join(tmpdir(), 'longhaul-synth-'));
  try {
    const app = new App({
      outdir,
      context: {
        ...cdkJson.context,
        // No stack matches an empty list, so no handler is bundled: the local stack runs their sources.
        'aws:cdk:bundling-stacks': [],
      },
    });
    const stack = new LonghaulStack(app, STACK_NAME, { settings });
    return app.synth().getStackByName(stack.stackName).template as TemplateJson;
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
