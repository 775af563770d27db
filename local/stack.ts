import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { S3VectorsClient } from '@aws-sdk/client-s3vectors';
import { SFNClient } from '@aws-sdk/client-sfn';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { allRoutes, resourceEnv, STREAM_PATH } from '../config/layout';
import { PROVIDER_NAMES, type ProviderName } from '../config/providers';
import type { Settings } from '../config/settings';
import { slotPoolKey } from '../lambdas/adapters/dynamodb-slot-items';
import { SfnWorkflow } from '../lambdas/adapters/sfn-workflow';
import type { Workflow } from '../lambdas/domain/ports';
import { seedApiKeys } from './api-keys';
import type { LocalConfig } from './config';
import { dynamoDbDir, lockDataDir, writeFileAtomically } from './data-dir';
import { startLocalEcs } from './ecs';
import { startDynamoDbEmulator } from './emulators/dynamodb';
import { startEventBridgeEmulator } from './emulators/eventbridge';
import { startS3VectorsEmulator } from './emulators/s3-vectors';
import { startSchedulerEmulator } from './emulators/scheduler';
import { startSecretsManagerEmulator } from './emulators/secrets-manager';
import { startSqsS3Emulator } from './emulators/sqs-s3';
import { startSqsEventSource } from './event-source';
import { loadFaults, SLOT_CONFLICTS_PROVIDER } from './faults';
import { functionUrlEndpoint, functionUrlOf } from './function-urls';
import { type Gateway, startGateway } from './gateway';
import {
  applyHandlerEnvironment,
  type EmulatorEndpoints,
  handlerEnvironment,
  LOCAL_REGION,
} from './handler-env';
import { type LocalHandlers, loadDispatchEnvironment, loadHandlers } from './handlers';
import { enforceIam } from './iam';
import { functionArn, invoke, LOCAL_ACCOUNT_ID, localFunctions, useTemplateFunctions } from './lambda';
import { setThrottleFault } from './lambda-service';
import { printHandlerLogs } from './log-lines';
import { startOps } from './ops';
import { startProvider } from './provider';
import { startReconcilerSchedule } from './reconciler';
import { ensureResources, type LocalResources, localQueueOf } from './resources';
import { loadTemplate } from './template';
import { startWebSocketApi } from './websocket-api/server';
import { startLocalWorkflow } from './workflow';

/**
 * The whole local stack, started in this order and stopped in reverse:
 * emulators, resources and seeded keys, the secrets endpoint, the provider
 * (the simulator, unless PROVIDER_URL names one), the ops view (local/ops,
 * capturing the handlers' metrics), ECS (local/ecs.ts) and the Step Functions endpoint,
 * the gateway and the WebSocket API on its port, then the handler environment
 * and the handlers, the event source mapping that feeds the jobs queue to the
 * dispatch handler, and last the reconciler's schedule, whose first pass runs
 * at once so a stack restarted after a crash converges without waiting.
 *
 * The endpoints listen before the handlers load because the handlers'
 * environment names them (AWS_ENDPOINT_URL_SFN, PROVIDER_WEBHOOK_URL,
 * STREAM_CALLBACK_URL) and their ports are only known once they listen
 * (PORT=0). Until the handlers have loaded, requests, handshakes and the
 * first steps of resumed executions wait.
 *
 * What it exposes is also written to `<dataDir>/local.json`.
 */

export const LOCAL_HOST = '127.0.0.1';

/**
 * `<dataDir>/local.json`: how tests and operators reach the running stack
 * with the real SDK: its resources, as the template names them, and each
 * endpoint.
 */
export interface LocalStackInfo extends LocalResources {
  readonly apiUrl: string;
  readonly region: string;
  readonly dynamodbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly s3Endpoint: string;
  /** S3 Vectors: the passage index, for an S3VectorsClient's `endpoint`. */
  readonly s3vectorsEndpoint: string;
  readonly sfnEndpoint: string;
  /** The media workflow: one execution per job, named after it. */
  readonly stateMachineArn: string;
  readonly secretsEndpoint: string;
  /** The provider the handlers call: the stack's simulator, or PROVIDER_URL. */
  readonly providerUrl: string;
  /** Live progress: `ws://127.0.0.1:<port>/v1/stream?ticket=…`, the ticket from POST /v1/jobs/{id}/stream-ticket. */
  readonly streamUrl: string;
  /** The WebSocket API's management endpoint (`@connections`), for an ApiGatewayManagementApiClient's `endpoint`. */
  readonly streamCallbackUrl: string;
  /**
   * Each function URL, by its function's service name: `provider-events` is
   * where providers post their webhooks, each under its route's path.
   */
  readonly functionUrls: Readonly<Record<string, string>>;
  /** EventBridge Scheduler: tenants' schedules' triggers; `POST /_scheduler/clock {advanceMs}` moves its clock on. */
  readonly schedulerEndpoint: string;
  /** The schedule group the triggers live in, as the template names it. */
  readonly scheduleGroupName: string;
  /** EventBridge: PutEvents, and `GET /_events/<bus>` of every event put on a bus (`{events}`). */
  readonly eventBridgeEndpoint: string;
  /** The deployment's lifecycle event bus, as the template names it. */
  readonly eventBusName: string;
}

/** Secret names in the local Secrets Manager; the ARNs reach the handlers as in AWS. */
export const localSecretNames = {
  provider: (provider: ProviderName) => `longhaul/provider/${provider}`,
  webhookSigning: 'longhaul/webhook-signing',
} as const;

/**
 * The API key a provider's secret holds locally: PROVIDER_API_KEY if set (the
 * simulator then requires it of every dialect). Without it the simulator
 * checks none, but the Replicate and Deepgram SDKs refuse to call without a
 * key, as their real APIs would; those get one the simulator ignores.
 */
function apiKeyFor(provider: ProviderName, apiKey: string | undefined): { apiKey?: string } {
  if (apiKey !== undefined) return { apiKey };
  return provider === 'longhaul-http' ? {} : { apiKey: 'local-unchecked-api-key' };
}

/** A promise settled from outside, for what must exist before its value does. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

/** The function behind a function URL of the template: only the provider events function has one. */
function urlFunctionOf(service: string): 'provider-events' {
  if (service !== 'provider-events') {
    throw new Error(`the template has a function URL of ${service}, which the local stack does not serve`);
  }
  return service;
}

export interface LocalStack {
  readonly info: LocalStackInfo;
  readonly gateway: Gateway;
  stop(): Promise<void>;
}

export const localInfoFile = (dataDir: string): string => join(dataDir, 'local.json');

export async function startLocalStack(
  config: LocalConfig,
  settings: Settings,
  log: (line: string) => void,
): Promise<LocalStack> {
  // Undone in reverse order on stop, or as far as start-up got when it fails.
  const undo: (() => unknown)[] = [];
  const stop = async () => {
    const errors: unknown[] = [];
    for (const step of undo.splice(0).reverse()) {
      try {
        await step();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, 'the local stack did not stop cleanly');
  };

  try {
    undo.push(lockDataDir(config.dataDir));
    const template = loadTemplate(settings);
    useTemplateFunctions(template);
    const faults = loadFaults(process.env);
    const [dynamodbStart, sqsS3Start] = await Promise.allSettled([
      startDynamoDbEmulator({
        host: LOCAL_HOST,
        path: dynamoDbDir(config.dataDir),
        indexLagMs: faults.gsiLagMs,
        log,
      }),
      startSqsS3Emulator({ host: LOCAL_HOST, region: LOCAL_REGION, dataDir: join(config.dataDir, 'fauxqs') }),
    ]);
    for (const start of [dynamodbStart, sqsS3Start]) {
      if (start.status === 'fulfilled') undo.push(() => start.value.stop());
    }
    if (dynamodbStart.status === 'rejected') throw dynamodbStart.reason;
    if (sqsS3Start.status === 'rejected') throw sqsS3Start.reason;
    const dynamodb = dynamodbStart.value;
    const sqsS3 = sqsS3Start.value;
    const s3vectors = await startS3VectorsEmulator({
      host: LOCAL_HOST,
      region: LOCAL_REGION,
      accountId: LOCAL_ACCOUNT_ID,
      dataDir: join(config.dataDir, 's3vectors'),
      log,
    });
    undo.push(() => s3vectors.close());
    // The buses are the template's: PutEvents to any other is refused, as AWS refuses a bus that does not exist.
    const eventBusName = template.eventBusName(template.resourceOfVariable(resourceEnv.eventBusName));
    const eventbridge = await startEventBridgeEmulator({
      host: LOCAL_HOST,
      region: LOCAL_REGION,
      accountId: LOCAL_ACCOUNT_ID,
      buses: template.resourcesOfType('AWS::Events::EventBus').map(([id]) => template.eventBusName(id)),
      dataDir: join(config.dataDir, 'eventbridge'),
    });
    undo.push(() => eventbridge.stop());
    const clientConfig = {
      region: LOCAL_REGION,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    };
    const dynamodbClient = new DynamoDBClient({ ...clientConfig, endpoint: dynamodb.endpoint });
    const sqsClient = new SQSClient({ ...clientConfig, endpoint: sqsS3.endpoint });
    const s3Client = new S3Client({ ...clientConfig, endpoint: sqsS3.endpoint, forcePathStyle: true });
    const s3vectorsClient = new S3VectorsClient({ ...clientConfig, endpoint: s3vectors.url });
    undo.push(() => {
      dynamodbClient.destroy();
      sqsClient.destroy();
      s3Client.destroy();
      s3vectorsClient.destroy();
    });

    const resources = await ensureResources(
      {
        dynamodb: dynamodbClient,
        sqs: sqsClient,
        s3: s3Client,
        s3vectors: s3vectorsClient,
        sqsEndpoint: sqsS3.endpoint,
      },
      template,
    );
    if (faults.slotConflicts > 0) {
      await dynamodb.armConflicts({
        table: resources.jobTableName,
        key: slotPoolKey(SLOT_CONFLICTS_PROVIDER),
        rate: faults.slotConflicts,
      });
      undo.push(() =>
        log(`conflicts armed on the slot pool item struck ${dynamodb.armedConflicts()} requests`),
      );
    }
    const seeded = await seedApiKeys(
      DynamoDBDocumentClient.from(dynamodbClient),
      resources.apiKeyTableName,
      config.apiKeys,
    );
    const tenants = config.apiKeys.filter((grant) => grant.role === 'tenant').map((grant) => grant.tenantId);
    log(
      `API keys for tenants ${[...new Set(tenants)].join(', ')} and the admin ` +
        `(${seeded.written} written, ${seeded.removed} removed)`,
    );

    const secrets = await startSecretsManagerEmulator({
      host: LOCAL_HOST,
      region: LOCAL_REGION,
      accountId: LOCAL_ACCOUNT_ID,
    });
    undo.push(() => secrets.stop());

    const provider = await startProvider(config.provider, LOCAL_HOST, log);
    undo.push(() => provider.close());
    // One secret per provider, each pointing at its dialect of the provider (contract section 3).
    const providerSecretArns = Object.fromEntries(
      PROVIDER_NAMES.map((name) => {
        const dialect = config.provider.dialects[name];
        return [
          name,
          secrets.put(
            localSecretNames.provider(name),
            JSON.stringify({
              baseUrl: `${provider.url}${dialect.basePath}`,
              ...apiKeyFor(name, config.provider.apiKey),
              webhookSecret: dialect.webhookSecret,
            }),
          ),
        ];
      }),
    ) as Record<ProviderName, string>;
    const webhookSecretArn = secrets.put(localSecretNames.webhookSigning, config.webhookSigningSecret);

    // Before the handlers load, so the ops view sees their first metrics.
    // The dashboard's timelines read the executions' histories once the local Step Functions listens.
    const histories = deferred<Pick<Workflow, 'stepEvents'>>();
    const ops = startOps({
      sqs: sqsClient,
      dynamodb: dynamodbClient,
      workflow: histories.promise,
      resources,
      settings,
      log,
    });
    undo.push(() => ops.stop());
    // Wrapped over the metric capture: EMF lines are no log records and pass on to it untouched.
    undo.push(printHandlerLogs(config.logFormat));

    // Settled once the handlers have loaded; never rejected, so nothing waits on a failure that has its own report.
    const handlersReady = deferred<LocalHandlers>();
    // Tasks resumed executions start wait for the environment, which names endpoints that do not listen yet.
    const environmentReady = deferred<Record<string, string>>();
    const ecs = startLocalEcs({ template, handlerEnvironment: environmentReady.promise, log });
    // Stopped after Step Functions: an execution let go of must not see its task's exit as a failure.
    undo.push(() => ecs.close());
    const workflow = await startLocalWorkflow({
      host: LOCAL_HOST,
      region: LOCAL_REGION,
      dataDir: join(config.dataDir, 'stepfunctions'),
      template,
      handlers: handlersReady.promise,
      runTask: ecs.runTask,
      unusableOutputs: faults.unusableOutputs,
    });
    undo.push(() => workflow.close());
    const sfnClient = new SFNClient({ ...clientConfig, endpoint: workflow.endpoint });
    undo.push(() => sfnClient.destroy());
    histories.resolve(new SfnWorkflow(sfnClient, workflow.stateMachineArn));

    // Each function URL of the template, on the gateway's port under a prefix of its own.
    const functionUrls = template.functionUrls().map((facts) => {
      const service = urlFunctionOf(facts.service);
      return functionUrlEndpoint({
        facts,
        fn: () => localFunctions[service],
        handler: handlersReady.promise.then((handlers) => handlers.providerEvents),
        log,
      });
    });
    let gateway: Gateway;
    try {
      gateway = await startGateway({
        host: LOCAL_HOST,
        port: config.port,
        routes: allRoutes,
        settings,
        throttles: template.restApiThrottles(),
        handlers: handlersReady.promise,
        log,
        localRoutes: ops.routes,
        mounts: functionUrls,
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        throw new Error(
          `port ${config.port} is already in use; set PORT to another port, or 0 for any free one`,
        );
      }
      throw error;
    }
    undo.push(() => gateway.close());

    const webSocketApi = await startWebSocketApi({
      server: gateway.server,
      gatewayUrl: gateway.url,
      path: STREAM_PATH,
      host: LOCAL_HOST,
      handler: handlersReady.promise.then((handlers) => handlers.stream),
      connectLatencyMs: faults.webSocketConnectMs,
      log,
    });
    undo.push(() => webSocketApi.close());

    const fireArn = functionArn(localFunctions.fire);
    const scheduler = await startSchedulerEmulator({
      host: LOCAL_HOST,
      region: LOCAL_REGION,
      accountId: LOCAL_ACCOUNT_ID,
      file: join(config.dataDir, 'scheduler.json'),
      // Scheduler's target is the fire function, invoked as Lambda invokes it, once the handlers have loaded.
      invoke: async (arn, input) => {
        if (arn !== fireArn) throw new Error(`no local function ${arn}`);
        const handlers = await handlersReady.promise;
        return invoke(localFunctions.fire, handlers.fire, input);
      },
      log,
    });
    undo.push(() => scheduler.stop());

    const endpoints: EmulatorEndpoints = {
      dynamodb: dynamodb.endpoint,
      sqs: sqsS3.endpoint,
      s3: sqsS3.endpoint,
      sfn: workflow.endpoint,
      secretsManager: secrets.endpoint,
      scheduler: scheduler.endpoint,
      s3vectors: s3vectors.url,
      eventbridge: eventbridge.endpoint,
    };
    const scheduleGroupName = template.scheduleGroupName();
    const environment = handlerEnvironment({
      settings,
      endpoints,
      resources,
      wiring: {
        stateMachineArn: workflow.stateMachineArn,
        providerSecretArns,
        webhookSecretArn,
        eventBusName,
        functionUrls: Object.fromEntries(
          functionUrls.flatMap((endpoint) =>
            endpoint.facts.variables.map((variable) => [variable, functionUrlOf(gateway.url, endpoint)]),
          ),
        ),
        streamCallbackUrl: webSocketApi.callbackUrl,
        schedules: {
          groupName: scheduleGroupName,
          targetArn: fireArn,
          roleArn: `arn:aws:iam::${LOCAL_ACCOUNT_ID}:role/longhaul-local-scheduler`,
          // Not a local queue: the emulator logs a firing it gives up on instead.
          deadLetterQueueArn: `arn:aws:sqs:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:longhaul-local-schedule-dead-letters`,
        },
      },
      env: process.env,
    });
    applyHandlerEnvironment(process.env, environment);
    environmentReady.resolve(environment);
    await ecs.ready;
    // Before the handlers load, so no call of theirs escapes their role's policies.
    undo.push(enforceIam({ template, handlerEnvironment: environment, log }));
    const handlers = await loadHandlers();
    handlersReady.resolve(handlers);

    if (faults.throttleShare > 0) {
      setThrottleFault({
        share: faults.throttleShare,
        functions: new Set([localFunctions.dispatch.name, localFunctions.workflow.name]),
      });
      undo.push(() => setThrottleFault(undefined));
    }

    if (config.dispatchEnabled) {
      const dispatch = localFunctions.dispatch;
      let environmentsLoaded = 0;
      const eventSources: { stop(): Promise<void> }[] = [];
      // Stopped together: each may wait for a receive in progress, and a stop must stay prompt.
      undo.push(async () => {
        await Promise.all(eventSources.map((eventSource) => eventSource.stop()));
      });
      // Each of the template's mappings (each provider's jobs queue, the hand-off lane) has its own pollers, as in Lambda.
      for (const mapping of template.eventSourceMappings(dispatch.service)) {
        if (!mapping.enabled) continue;
        const queue = localQueueOf(template, resources, mapping.sourceLogicalId);
        // Without a maximum, Lambda scales the pollers with the backlog; the local stack stays at its minimum of two.
        const maxConcurrency = mapping.maximumConcurrency ?? 2;
        // One execution environment per concurrent invocation, as in Lambda.
        const environments = Array.from({ length: maxConcurrency }, () =>
          environmentsLoaded++ === 0 ? handlers.dispatch : loadDispatchEnvironment(),
        );
        const eventSource = startSqsEventSource({
          client: sqsClient,
          queueUrl: queue.url,
          queueArn: queue.arn,
          region: LOCAL_REGION,
          batchSize: mapping.batchSize,
          maxConcurrency,
          functionName: dispatch.name,
          recursiveLoop: template.function(dispatch.service).recursiveLoop,
          invoke: (event, poller, traceHeader) =>
            invoke(dispatch, environments[poller] ?? handlers.dispatch, event, { traceHeader }),
          log: (line) => log(`dispatch (${mapping.logicalId}): ${line}`),
        });
        eventSources.push(eventSource);
      }
    } else {
      log('LONGHAUL_DISPATCH is off: jobs stay in the queue');
    }

    const reconciler = startReconcilerSchedule({
      intervalMs: settings.reconcileIntervalMs,
      // What EventBridge Scheduler's Lambda target sends when the schedule gives no input.
      runPass: () => invoke(localFunctions.reconcile, handlers.reconcile, {}),
      log,
    });
    undo.push(() => reconciler.stop());

    const info: LocalStackInfo = {
      apiUrl: gateway.url,
      region: LOCAL_REGION,
      dynamodbEndpoint: endpoints.dynamodb,
      sqsEndpoint: endpoints.sqs,
      s3Endpoint: endpoints.s3,
      s3vectorsEndpoint: endpoints.s3vectors,
      ...resources,
      sfnEndpoint: endpoints.sfn,
      stateMachineArn: workflow.stateMachineArn,
      secretsEndpoint: endpoints.secretsManager,
      providerUrl: provider.url,
      streamUrl: webSocketApi.url,
      streamCallbackUrl: webSocketApi.callbackUrl,
      functionUrls: Object.fromEntries(
        functionUrls.map((endpoint) => [endpoint.facts.service, functionUrlOf(gateway.url, endpoint)]),
      ),
      schedulerEndpoint: scheduler.endpoint,
      scheduleGroupName,
      eventBridgeEndpoint: endpoints.eventbridge,
      eventBusName,
    };
    const infoFile = localInfoFile(config.dataDir);
    writeFileAtomically(infoFile, `${JSON.stringify(info, null, 2)}\n`);
    // It describes a running stack (the ports change on every start), so it goes when the stack does.
    undo.push(() => rmSync(infoFile, { force: true }));
    return { info, gateway, stop };
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
}
