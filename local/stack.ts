import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { routes } from '../config/layout';
import type { Settings } from '../config/settings';
import { seedApiKeys } from './api-keys';
import type { LocalConfig } from './config';
import { lockDataDir, writeFileAtomically } from './data-dir';
import { startDynamoDbEmulator } from './emulators/dynamodb';
import { startSqsS3Emulator } from './emulators/sqs-s3';
import { type Gateway, startGateway } from './gateway';
import {
  applyHandlerEnvironment,
  type EmulatorEndpoints,
  handlerEnvironment,
  LOCAL_REGION,
} from './handler-env';
import { loadHandlers } from './handlers';
import { ensureResources } from './resources';

/**
 * The whole local stack: emulators, resources, seeded keys, handler
 * environment, handlers and gateway, started in that order and stopped in
 * reverse. What it exposes is also written to `<dataDir>/local.json`.
 */

export const LOCAL_HOST = '127.0.0.1';

/** `<dataDir>/local.json`: how tests and operators reach the running stack with the real SDK. */
export interface LocalStackInfo {
  readonly apiUrl: string;
  readonly region: string;
  readonly dynamodbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly s3Endpoint: string;
  readonly jobTableName: string;
  readonly apiKeyTableName: string;
  readonly jobQueueUrl: string;
  readonly deadLetterQueueUrl: string;
  readonly inputBucketName: string;
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
    const [dynamodbStart, sqsS3Start] = await Promise.allSettled([
      startDynamoDbEmulator({ host: LOCAL_HOST, path: join(config.dataDir, 'dynamodb') }),
      startSqsS3Emulator({ host: LOCAL_HOST, dataDir: join(config.dataDir, 'fauxqs') }),
    ]);
    for (const start of [dynamodbStart, sqsS3Start]) {
      if (start.status === 'fulfilled') undo.push(() => start.value.stop());
    }
    if (dynamodbStart.status === 'rejected') throw dynamodbStart.reason;
    if (sqsS3Start.status === 'rejected') throw sqsS3Start.reason;
    const dynamodb = dynamodbStart.value;
    const sqsS3 = sqsS3Start.value;
    const endpoints: EmulatorEndpoints = {
      dynamodb: dynamodb.endpoint,
      sqs: sqsS3.endpoint,
      s3: sqsS3.endpoint,
    };

    const clientConfig = {
      region: LOCAL_REGION,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    };
    const dynamodbClient = new DynamoDBClient({ ...clientConfig, endpoint: endpoints.dynamodb });
    const sqsClient = new SQSClient({ ...clientConfig, endpoint: endpoints.sqs });
    const s3Client = new S3Client({ ...clientConfig, endpoint: endpoints.s3, forcePathStyle: true });
    undo.push(() => {
      dynamodbClient.destroy();
      sqsClient.destroy();
      s3Client.destroy();
    });

    const resources = await ensureResources(
      { dynamodb: dynamodbClient, sqs: sqsClient, s3: s3Client, sqsEndpoint: endpoints.sqs },
      settings,
    );
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

    applyHandlerEnvironment(
      process.env,
      handlerEnvironment({ settings, endpoints, resources, env: process.env }),
    );
    const handlers = await loadHandlers();

    let gateway: Gateway;
    try {
      gateway = await startGateway({ host: LOCAL_HOST, port: config.port, routes, settings, handlers, log });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        throw new Error(
          `port ${config.port} is already in use; set PORT to another port, or 0 for any free one`,
        );
      }
      throw error;
    }
    undo.push(() => gateway.close());

    const info: LocalStackInfo = {
      apiUrl: gateway.url,
      region: LOCAL_REGION,
      dynamodbEndpoint: endpoints.dynamodb,
      sqsEndpoint: endpoints.sqs,
      s3Endpoint: endpoints.s3,
      ...resources,
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
