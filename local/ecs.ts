import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { computeContainer, resourceEnv } from '../config/layout';
import type { IntrinsicLookup } from '../lib/workflow-definition';
import { LOCAL_REGION } from './handler-env';
import { assumedRole, isUnresolved, localReferences, requestScope, resolvePolicy } from './iam';
import type { RequestScope } from './iam-requests';
import { LOCAL_ACCOUNT_ID } from './lambda';
import type { Json } from './stepfunctions/definition';
import type { RunTask } from './stepfunctions/execution';
import { getAttTarget, type LocalTemplate, type PolicyDocumentJson } from './template';

/**
 * ECS for the local stack: what an `ecs:runTask.sync` state starts. The
 * template's Fargate task definition runs as a child process of the source
 * its image runs (`computeContainer.entry`, with tsx, as `npm start` runs
 * TypeScript), with the container's environment from the template (its
 * references resolved to the local resources, as the functions' are), the
 * state's container overrides, and the endpoints and dummy credentials the
 * local handlers get. ffmpeg is the npm packages' build for this machine:
 * the image's FFMPEG_PATH is the image's, not the template's, so it is unset.
 * Every AWS call of the task is checked against its task role's policies
 * from the template, as the functions' are (local/task-iam.ts, loaded first).
 *
 * The state's answer is the stopped task's description, in `DescribeTasks`'
 * shape; the local Step Functions fails the state when a container exited
 * with anything but 0. A task whose state no longer waits for it (timed out,
 * its execution stopped, the stack stopping) is stopped as ECS stops one:
 * SIGTERM, then SIGKILL after a grace period.
 */

const REPO_ROOT = join(__dirname, '..');

/** The sources the local stack runs in place of a container's image, by container name. */
const CONTAINER_ENTRIES: Readonly<Record<string, string>> = {
  [computeContainer.name]: computeContainer.entry,
};

/** Where the local stack hands a task its task role's resolved policies; local/task-iam.ts reads it. */
export const TASK_IAM_ENV = 'LONGHAUL_LOCAL_TASK_IAM';

/** What TASK_IAM_ENV holds, as JSON. */
export interface TaskIam {
  readonly principal: string;
  readonly policies: readonly PolicyDocumentJson[];
  readonly scope: RequestScope;
}

const TASK_IAM_PRELOAD = join(__dirname, 'task-iam.ts');

/** ECS waits 30 s by default; locally a stopped task has 2 s to exit on its own. */
const STOP_GRACE_MS = 2_000;

const arn = (resource: string) => `arn:aws:ecs:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:${resource}`;

/** The local stand-ins of what a run-task state names: clusters, task definitions, subnets, security groups. */
export const localEcsIds = {
  cluster: (logicalId: string) => arn(`cluster/${logicalId}`),
  taskDefinition: (family: string) => arn(`task-definition/${family}:1`),
  subnet: (logicalId: string) => `subnet-${logicalId}`,
  securityGroup: (logicalId: string) => `sg-${logicalId}`,
} as const;

/**
 * What the template's references to ECS and VPC resources are locally, for
 * `resolveIntrinsics`: a run-task state's Parameters name its cluster (ARN),
 * its subnets (Ref) and security groups (GroupId), and maybe its task
 * definition (Ref; CDK usually writes the family name itself).
 */
export function ecsReferenceLookup(template: LocalTemplate): IntrinsicLookup {
  return (node) => {
    const ref = node.Ref;
    const att = node['Fn::GetAtt'];
    const [logicalId, attribute] =
      typeof ref === 'string' ? [ref, undefined] : Array.isArray(att) ? [String(att[0]), String(att[1])] : [];
    if (logicalId === undefined) return undefined;
    const resource = template.json.Resources[logicalId];
    switch (resource?.Type) {
      case 'AWS::ECS::Cluster':
        return attribute === 'Arn' || attribute === undefined ? localEcsIds.cluster(logicalId) : undefined;
      case 'AWS::ECS::TaskDefinition':
        return attribute === undefined
          ? localEcsIds.taskDefinition(familyOf(template, logicalId))
          : undefined;
      case 'AWS::EC2::Subnet':
        return attribute === undefined ? localEcsIds.subnet(logicalId) : undefined;
      case 'AWS::EC2::SecurityGroup':
        return attribute === 'GroupId' ? localEcsIds.securityGroup(logicalId) : undefined;
      default:
        return undefined;
    }
  };
}

function familyOf(template: LocalTemplate, logicalId: string): string {
  const family = template.resource(logicalId, 'AWS::ECS::TaskDefinition').Properties?.Family;
  return typeof family === 'string' ? family : logicalId;
}

/** An error as ECS answers a RunTask it refuses; Step Functions names it `ECS.<code>`. */
function ecsError(code: string, message: string): Error {
  const error = new Error(message);
  error.name = `ECS.${code}`;
  return error;
}

interface KeyValue {
  readonly Name?: unknown;
  readonly Value?: unknown;
}

interface TaskDefinitionFacts {
  readonly arn: string;
  readonly family: string;
  readonly cpu?: string;
  readonly memory?: string;
  /** The task role's logical id; a task without one has no credentials, so IAM allows it nothing. */
  readonly taskRoleId?: string;
  readonly containers: readonly {
    readonly name: string;
    readonly environment: Readonly<Record<string, unknown>>;
  }[];
}

function taskDefinitions(template: LocalTemplate): TaskDefinitionFacts[] {
  return template.resourcesOfType('AWS::ECS::TaskDefinition').map(([logicalId, resource]) => {
    const props = resource.Properties ?? {};
    const family = familyOf(template, logicalId);
    return {
      arn: localEcsIds.taskDefinition(family),
      family,
      ...(typeof props.Cpu === 'string' ? { cpu: props.Cpu } : {}),
      ...(typeof props.Memory === 'string' ? { memory: props.Memory } : {}),
      ...(props.TaskRoleArn === undefined
        ? {}
        : { taskRoleId: getAttTarget(props.TaskRoleArn, `${logicalId}.TaskRoleArn`) }),
      containers: ((props.ContainerDefinitions ?? []) as Record<string, unknown>[]).map((container) => ({
        name: String(container.Name),
        environment: Object.fromEntries(
          ((container.Environment ?? []) as KeyValue[]).map(({ Name, Value }) => [String(Name), Value]),
        ),
      })),
    };
  });
}

export interface LocalEcs {
  readonly runTask: RunTask;
  /**
   * Settles once the handler environment is known and every container's
   * environment resolved locally; rejects, naming the value, when one cannot be.
   */
  readonly ready: Promise<void>;
  /** Stops every task still running and waits for them to exit; the stack calls it after Step Functions has closed. */
  close(): Promise<void>;
}

export function startLocalEcs(options: {
  readonly template: LocalTemplate;
  /**
   * The environment the local handlers run with (endpoints, credentials, the
   * local names of the resources); known only once the emulators listen, so
   * tasks started before then wait for it.
   */
  readonly handlerEnvironment: Promise<Readonly<Record<string, string>>>;
  readonly log: (line: string) => void;
  /**
   * The source run for each container, by container name, relative to the repository.
   * @default - each image's own source (`computeContainer.entry` for the compute task)
   */
  readonly containerEntries?: Readonly<Record<string, string>>;
}): LocalEcs {
  const { template, log } = options;
  const containerEntries = options.containerEntries ?? CONTAINER_ENTRIES;
  const definitions = taskDefinitions(template);
  const clusters = new Set(
    template.resourcesOfType('AWS::ECS::Cluster').map(([logicalId]) => localEcsIds.cluster(logicalId)),
  );
  const prepared = options.handlerEnvironment.then((handlerEnvironment) =>
    prepareEnvironments(template, definitions, handlerEnvironment),
  );
  const running = new Map<Promise<number>, AbortController>();

  const runTask: RunTask = async (parameters, { signal }) => {
    const params = (parameters ?? {}) as Record<string, Json>;
    const clusterArn = clusterOf(params.Cluster, clusters);
    const definition = definitionOf(params.TaskDefinition, definitions);
    if (params.LaunchType !== undefined && params.LaunchType !== 'FARGATE') {
      throw ecsError(
        'InvalidParameterException',
        `LaunchType ${String(params.LaunchType)} does not run here`,
      );
    }
    const overrides = containerOverrides(params, definition);
    const entries = definition.containers.map((container) => {
      const entry = containerEntries[container.name];
      if (entry === undefined) {
        throw ecsError(
          'ClientException',
          `container ${container.name} of ${definition.family} has no local source to run`,
        );
      }
      return { name: container.name, entry };
    });
    const { aws, containers, taskPolicies, scope } = await prepared;
    const taskId = randomUUID().replaceAll('-', '');
    const taskArn = arn(`task/${clusterArn.slice(clusterArn.indexOf('/') + 1)}/${taskId}`);
    const createdAt = Date.now();
    const stopped = new AbortController();
    const stop = () => stopped.abort();
    signal.addEventListener('abort', stop, { once: true });
    if (signal.aborted) stop();
    let exits: { name: string; exitCode: number }[];
    try {
      exits = await Promise.all(
        entries.map(({ name, entry }) => {
          const iam: TaskIam = {
            principal: assumedRole(definition.taskRoleId ?? 'no-task-role', taskId),
            policies: taskPolicies.get(definition.arn) ?? [],
            scope,
          };
          const environment: Record<string, string> = {
            ...baseEnvironment(),
            ...aws,
            ...containers.get(`${definition.arn}/${name}`),
            ...overrides.get(name),
            [TASK_IAM_ENV]: JSON.stringify(iam),
          };
          const exited = runContainer(entry, environment, stopped.signal, (line) =>
            log(`ecs task ${taskId.slice(0, 8)} (${name}): ${line}`),
          );
          running.set(exited, stopped);
          void exited.then(
            () => running.delete(exited),
            () => running.delete(exited),
          );
          return exited.then((exitCode) => ({ name, exitCode }));
        }),
      );
    } finally {
      signal.removeEventListener('abort', stop);
    }
    const iso = (ms: number) => new Date(ms).toISOString();
    return {
      Attachments: [],
      ClusterArn: clusterArn,
      Containers: exits.map(({ name, exitCode }) => ({
        ContainerArn: arn(`container/${taskId}/${name}`),
        ExitCode: exitCode,
        LastStatus: 'STOPPED',
        Name: name,
        TaskArn: taskArn,
      })),
      ...(definition.cpu === undefined ? {} : { Cpu: definition.cpu }),
      ...(definition.memory === undefined ? {} : { Memory: definition.memory }),
      CreatedAt: iso(createdAt),
      DesiredStatus: 'STOPPED',
      Group: `family:${definition.family}`,
      LastStatus: 'STOPPED',
      LaunchType: 'FARGATE',
      Overrides: (params.Overrides ?? { ContainerOverrides: [] }) as Json,
      StartedAt: iso(createdAt),
      StopCode: stopped.signal.aborted ? 'UserInitiated' : 'EssentialContainerExited',
      StoppedAt: iso(Date.now()),
      StoppedReason: stopped.signal.aborted
        ? 'Task stopped by the state machine'
        : 'Essential container in task exited',
      TaskArn: taskArn,
      TaskDefinitionArn: definition.arn,
    } satisfies Json;
  };

  return {
    runTask,
    ready: prepared.then(() => undefined),
    async close() {
      for (const stopped of running.values()) stopped.abort();
      await Promise.allSettled([...running.keys()]);
    },
  };
}

/**
 * Each container's environment with the template's references resolved as
 * the functions' are (the local table and bucket names), and the AWS part of
 * the handler environment: the emulators' endpoints, region and dummy
 * credentials, never the Lambda-only variables.
 */
function prepareEnvironments(
  template: LocalTemplate,
  definitions: readonly TaskDefinitionFacts[],
  handlerEnvironment: Readonly<Record<string, string>>,
): {
  aws: Record<string, string>;
  containers: Map<string, Record<string, string>>;
  taskPolicies: Map<string, PolicyDocumentJson[]>;
  scope: RequestScope;
} {
  const reference = localReferences(template, handlerEnvironment);
  const resolveValue = (value: unknown, where: string): string => {
    if (typeof value === 'string') return value;
    const node = value as { Ref?: unknown; 'Fn::GetAtt'?: unknown } | null;
    const att = node?.['Fn::GetAtt'];
    const resolved =
      typeof node?.Ref === 'string'
        ? reference(node.Ref)
        : Array.isArray(att)
          ? reference(String(att[0]), String(att[1]))
          : undefined;
    if (resolved === undefined || isUnresolved(resolved)) {
      throw new Error(`${template.source}: ${where} is ${JSON.stringify(value)}, which has no local value`);
    }
    return resolved;
  };
  const containers = new Map(
    definitions.flatMap((definition) =>
      definition.containers.map((container) => [
        `${definition.arn}/${container.name}`,
        Object.fromEntries(
          Object.entries(container.environment).map(([name, value]) => [
            name,
            resolveValue(value, `${definition.family}/${container.name} ${name}`),
          ]),
        ),
      ]),
    ),
  );
  const aws = Object.fromEntries(
    Object.entries(handlerEnvironment).filter(
      ([name]) =>
        (name.startsWith('AWS_') && !name.startsWith('AWS_LAMBDA_')) || name === resourceEnv.s3ForcePathStyle,
    ),
  );
  const taskPolicies = new Map(
    definitions.map((definition) => [
      definition.arn,
      definition.taskRoleId === undefined
        ? []
        : template
            .policiesOfRole(definition.taskRoleId)
            .map((document) => resolvePolicy(document, reference)),
    ]),
  );
  return { aws, containers, taskPolicies, scope: requestScope(template) };
}

function clusterOf(value: Json | undefined, clusters: ReadonlySet<string>): string {
  const name = typeof value === 'string' ? value : 'default';
  const found = [...clusters].find((cluster) => cluster === name || cluster.endsWith(`/${name}`));
  if (found === undefined) throw ecsError('ClusterNotFoundException', 'Cluster not found.');
  return found;
}

function definitionOf(
  value: Json | undefined,
  definitions: readonly TaskDefinitionFacts[],
): TaskDefinitionFacts {
  const named = typeof value === 'string' ? value : '';
  const found = definitions.find(
    (definition) =>
      named === definition.arn ||
      named === definition.family ||
      named === `${definition.family}:1` ||
      named === definition.arn.slice(0, definition.arn.lastIndexOf(':')),
  );
  if (found === undefined) {
    throw ecsError('ClientException', `Unable to find task definition '${named}'.`);
  }
  return found;
}

/** `Overrides.ContainerOverrides[].Environment`, by container name; a container the definition lacks is refused. */
function containerOverrides(
  params: Record<string, Json>,
  definition: TaskDefinitionFacts,
): Map<string, Record<string, string>> {
  const overrides = ((params.Overrides as Record<string, Json> | undefined)?.ContainerOverrides ?? []) as {
    Name?: Json;
    Environment?: KeyValue[];
  }[];
  const byName = new Map<string, Record<string, string>>();
  for (const override of overrides) {
    const name = String(override.Name);
    if (!definition.containers.some((container) => container.name === name)) {
      throw ecsError(
        'InvalidParameterException',
        `Override for container named ${name} is not a container in the TaskDefinition.`,
      );
    }
    byName.set(
      name,
      Object.fromEntries(
        (override.Environment ?? []).map(({ Name, Value }) => {
          if (typeof Name !== 'string' || typeof Value !== 'string') {
            throw ecsError(
              'InvalidParameterException',
              `Environment override ${String(Name)} must be a string`,
            );
          }
          return [Name, Value];
        }),
      ),
    );
  }
  return byName;
}

/** What a process needs to start at all; nothing else of this process's environment reaches a task. */
function baseEnvironment(): Record<string, string> {
  return Object.fromEntries(
    ['PATH', 'HOME', 'TMPDIR', 'LANG']
      .map((name) => [name, process.env[name]])
      .filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

/** Runs one container's source with tsx until it exits; its exit code, or 128 + the signal as Docker reports it. */
function runContainer(
  entry: string,
  environment: Record<string, string>,
  signal: AbortSignal,
  log: (line: string) => void,
): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    if (signal.aborted) {
      resolve(143);
      return;
    }
    const child: ChildProcess = spawn(
      process.execPath,
      ['--import', 'tsx', '--import', TASK_IAM_PRELOAD, join(REPO_ROOT, entry)],
      {
        cwd: REPO_ROOT,
        env: environment,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', log);
    }
    let killTimer: NodeJS.Timeout | undefined;
    const stop = () => {
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    };
    signal.addEventListener('abort', stop, { once: true });
    child.once('error', (error) => {
      signal.removeEventListener('abort', stop);
      reject(ecsError('ClientException', `the task could not start: ${error.message}`));
    });
    child.once('exit', (code, exitSignal) => {
      signal.removeEventListener('abort', stop);
      clearTimeout(killTimer);
      resolve(code ?? 128 + signalNumber(exitSignal));
    });
  });
}

function signalNumber(signal: NodeJS.Signals | null): number {
  const numbers: Partial<Record<NodeJS.Signals, number>> = { SIGKILL: 9, SIGTERM: 15, SIGINT: 2 };
  return (signal && numbers[signal]) ?? 0;
}
