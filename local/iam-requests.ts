/**
 * What IAM authorizes for an AWS API request as the SDK sends it: the
 * actions and the resource ARNs each applies to, for the services the
 * handlers call (DynamoDB, SQS, S3, Step Functions, Secrets Manager, the
 * API Gateway Management API, EventBridge Scheduler, EventBridge and S3 Vectors). A request this module cannot read yields
 * undefined, which the local stack denies: an unknown call is never waved
 * through.
 */

/** One action on one resource; a request may need several (a batch across tables, a copy). */
export interface Authorization {
  readonly action: string;
  readonly resource: string;
  /** Condition keys the service sets on the request (`iam:PassedToService` for a passed role). */
  readonly context?: Readonly<Record<string, string>>;
}

/** The parts of a signed HTTP request the mapping reads. */
export interface SignedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string | readonly string[] | null | undefined>>;
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** The body when it is text (the JSON protocols); undefined for streams and bytes. */
  readonly body?: string;
}

export interface RequestScope {
  readonly region: string;
  readonly accountId: string;
  /** The WebSocket API whose management endpoint the functions call, as the template names it. */
  readonly webSocket: { readonly apiId: string; readonly stage: string };
}

/** The service a request was signed for: SigV4's credential scope names it. */
export function signingService(headers: SignedRequest['headers']): string | undefined {
  const authorization = header(headers, 'authorization');
  return authorization?.match(/Credential=[^/]+\/\d{8}\/[^/]+\/([^/]+)\/aws4_request/)?.[1];
}

export function authorizations(request: SignedRequest, scope: RequestScope): Authorization[] | undefined {
  switch (signingService(request.headers)) {
    case 'dynamodb':
      return dynamodb(request, scope);
    case 'sqs':
      return sqs(request, scope);
    case 's3':
      return s3(request);
    case 'states':
      return stepFunctions(request);
    case 'secretsmanager':
      return secretsManager(request);
    case 'execute-api':
      return manageConnections(request, scope);
    case 'scheduler':
      return scheduler(request, scope);
    case 'events':
      return eventBridge(request, scope);
    case 's3vectors':
      return s3vectors(request, scope);
    case 'bedrock':
      return bedrock(request, scope);
    default:
      return undefined;
  }
}

function header(headers: SignedRequest['headers'], name: string): string | undefined {
  const found = Object.entries(headers).find(([key]) => key.toLowerCase() === name);
  return found?.[1];
}

/** The operation of a JSON-protocol request, from `X-Amz-Target: <Service>.<Operation>`. */
function jsonOperation(
  request: SignedRequest,
  prefix: string,
): { op: string; body: Record<string, unknown> } | undefined {
  const target = header(request.headers, 'x-amz-target');
  if (!target?.startsWith(`${prefix}.`) || request.body === undefined) return undefined;
  try {
    const body = JSON.parse(request.body || '{}') as unknown;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
    return { op: target.slice(prefix.length + 1), body: body as Record<string, unknown> };
  } catch {
    return undefined;
  }
}

const str = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

function dynamodb(request: SignedRequest, scope: RequestScope): Authorization[] | undefined {
  const parsed = jsonOperation(request, 'DynamoDB_20120810');
  if (!parsed) return undefined;
  const { op, body } = parsed;
  const tableArn = (table: string) =>
    table.startsWith('arn:') ? table : `arn:aws:dynamodb:${scope.region}:${scope.accountId}:table/${table}`;
  if (op === 'ListTables') return [{ action: 'dynamodb:ListTables', resource: '*' }];
  if (op === 'BatchGetItem' || op === 'BatchWriteItem') {
    const tables = Object.keys((body.RequestItems ?? {}) as object);
    return tables.length === 0
      ? undefined
      : tables.map((t) => ({ action: `dynamodb:${op}`, resource: tableArn(t) }));
  }
  if (op === 'TransactWriteItems' || op === 'TransactGetItems') {
    // Each item needs the permission of the single-item operation it stands for.
    const kinds: Record<string, string> = {
      Put: 'PutItem',
      Update: 'UpdateItem',
      Delete: 'DeleteItem',
      ConditionCheck: 'ConditionCheckItem',
      Get: 'GetItem',
    };
    const items = (body.TransactItems ?? []) as Record<string, { TableName?: unknown }>[];
    const found = items.flatMap((item) =>
      Object.entries(item).map(([kind, detail]) => {
        const table = str(detail?.TableName);
        return kinds[kind] && table
          ? { action: `dynamodb:${kinds[kind]}`, resource: tableArn(table) }
          : undefined;
      }),
    );
    return found.length === 0 || found.includes(undefined) ? undefined : (found as Authorization[]);
  }
  const table = str(body.TableName);
  if (!table || !/^[A-Z][A-Za-z]+$/.test(op)) return undefined;
  const index = str(body.IndexName);
  return [
    { action: `dynamodb:${op}`, resource: index ? `${tableArn(table)}/index/${index}` : tableArn(table) },
  ];
}

function sqs(request: SignedRequest, scope: RequestScope): Authorization[] | undefined {
  const parsed = jsonOperation(request, 'AmazonSQS');
  if (!parsed) return undefined;
  const { op, body } = parsed;
  const queueArn = (url: string): string | undefined => {
    const [account, name] = new URL(url).pathname.split('/').filter(Boolean).slice(-2);
    if (!name) return undefined;
    return `arn:aws:sqs:${scope.region}:${account && /^\d{12}$/.test(account) ? account : scope.accountId}:${name}`;
  };
  // Batches are authorized as the single operation.
  const single: Record<string, string> = {
    SendMessageBatch: 'SendMessage',
    DeleteMessageBatch: 'DeleteMessage',
    ChangeMessageVisibilityBatch: 'ChangeMessageVisibility',
  };
  if (op === 'ListQueues') return [{ action: 'sqs:ListQueues', resource: '*' }];
  if (op === 'GetQueueUrl') {
    const name = str(body.QueueName);
    const account = str(body.QueueOwnerAWSAccountId) ?? scope.accountId;
    return name
      ? [{ action: 'sqs:GetQueueUrl', resource: `arn:aws:sqs:${scope.region}:${account}:${name}` }]
      : undefined;
  }
  if (op === 'StartMessageMoveTask') {
    // SQS reads the source as its consumer and writes the destination as its producer, with the caller's rights.
    const source = str(body.SourceArn);
    if (!source) return undefined;
    const destination = str(body.DestinationArn);
    return [
      ...['StartMessageMoveTask', 'ReceiveMessage', 'DeleteMessage', 'GetQueueAttributes'].map((action) => ({
        action: `sqs:${action}`,
        resource: source,
      })),
      ...(destination ? [{ action: 'sqs:SendMessage', resource: destination }] : []),
    ];
  }
  if (op === 'ListMessageMoveTasks') {
    const source = str(body.SourceArn);
    return source ? [{ action: 'sqs:ListMessageMoveTasks', resource: source }] : undefined;
  }
  const url = str(body.QueueUrl);
  const arn = url ? queueArn(url) : undefined;
  if (!arn || !/^[A-Z][A-Za-z]+$/.test(op)) return undefined;
  return [{ action: `sqs:${single[op] ?? op}`, resource: arn }];
}

/** Query parameters that carry no S3 subresource: the SDK's operation hint and presigning. */
const isSubresource = (name: string) => name !== 'x-id' && !name.toLowerCase().startsWith('x-amz-');
/** Parameters of a listing, which name no subresource either. */
const LIST_PARAMETERS = new Set([
  'prefix',
  'delimiter',
  'max-keys',
  'continuation-token',
  'start-after',
  'encoding-type',
  'fetch-owner',
  'marker',
  'key-marker',
  'version-id-marker',
  'upload-id-marker',
  'max-uploads',
]);

function s3(request: SignedRequest): Authorization[] | undefined {
  const [bucket, ...rest] = request.path.replace(/^\//, '').split('/');
  const key = rest.map(decodeURIComponent).join('/');
  const method = request.method.toUpperCase();
  const sub = Object.keys(request.query).filter(isSubresource).sort().join('&');
  if (!bucket)
    return method === 'GET' && sub === '' ? [{ action: 's3:ListAllMyBuckets', resource: '*' }] : undefined;
  const bucketArn = `arn:aws:s3:::${decodeURIComponent(bucket)}`;
  if (key === '') {
    const bucketSub = Object.keys(request.query)
      .filter((name) => isSubresource(name) && !LIST_PARAMETERS.has(name))
      .sort()
      .join('&');
    const onBucket: Record<string, string> = {
      'GET ': 's3:ListBucket',
      'GET list-type': 's3:ListBucket',
      'HEAD ': 's3:ListBucket',
      'GET versions': 's3:ListBucketVersions',
      'GET uploads': 's3:ListBucketMultipartUploads',
      'GET location': 's3:GetBucketLocation',
    };
    if (method === 'POST' && sub === 'delete') {
      const keys = [...(request.body ?? '').matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1] as string);
      return keys.length === 0
        ? undefined
        : keys.map((k) => ({ action: 's3:DeleteObject', resource: `${bucketArn}/${unescapeXml(k)}` }));
    }
    const action = onBucket[`${method} ${bucketSub}`];
    return action ? [{ action, resource: bucketArn }] : undefined;
  }
  const objectArn = `${bucketArn}/${key}`;
  const onObject: Record<string, string> = {
    'GET ': 's3:GetObject',
    'HEAD ': 's3:GetObject',
    'GET partNumber': 's3:GetObject',
    'HEAD partNumber': 's3:GetObject',
    'PUT ': 's3:PutObject',
    'POST uploads': 's3:PutObject',
    'PUT partNumber&uploadId': 's3:PutObject',
    'POST uploadId': 's3:PutObject',
    'DELETE uploadId': 's3:AbortMultipartUpload',
    'GET uploadId': 's3:ListMultipartUploadParts',
    'DELETE ': 's3:DeleteObject',
    'GET tagging': 's3:GetObjectTagging',
    'PUT tagging': 's3:PutObjectTagging',
  };
  const action = onObject[`${method} ${sub}`];
  if (!action) return undefined;
  const copySource = header(request.headers, 'x-amz-copy-source');
  if (copySource === undefined) return [{ action, resource: objectArn }];
  // A copy reads its source with the caller's rights.
  const source = decodeURIComponent(copySource.split('?')[0] ?? '').replace(/^\//, '');
  return [
    { action, resource: objectArn },
    { action: 's3:GetObject', resource: `arn:aws:s3:::${source}` },
  ];
}

function unescapeXml(text: string): string {
  return text
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"')
    .replaceAll('&apos;', "'")
    .replaceAll('&amp;', '&');
}

function stepFunctions(request: SignedRequest): Authorization[] | undefined {
  const parsed = jsonOperation(request, 'AWSStepFunctions');
  if (!parsed) return undefined;
  const { op, body } = parsed;
  const onStateMachine = ['StartExecution', 'StartSyncExecution', 'DescribeStateMachine', 'ListExecutions'];
  const onExecution = ['DescribeExecution', 'StopExecution', 'GetExecutionHistory', 'RedriveExecution'];
  // Task tokens name no resource: IAM knows these actions only on "*".
  const onNothing = ['SendTaskSuccess', 'SendTaskFailure', 'SendTaskHeartbeat', 'ListStateMachines'];
  const resource = onStateMachine.includes(op)
    ? str(body.stateMachineArn)
    : onExecution.includes(op)
      ? str(body.executionArn)
      : onNothing.includes(op)
        ? '*'
        : undefined;
  return resource ? [{ action: `states:${op}`, resource }] : undefined;
}

function secretsManager(request: SignedRequest): Authorization[] | undefined {
  const parsed = jsonOperation(request, 'secretsmanager');
  if (!parsed) return undefined;
  const secretId = str(parsed.body.SecretId);
  // A secret named rather than given by ARN would need the ARN's random suffix, which only the service knows.
  if (!secretId?.startsWith('arn:') || !/^[A-Z][A-Za-z]+$/.test(parsed.op)) return undefined;
  return [{ action: `secretsmanager:${parsed.op}`, resource: secretId }];
}

/**
 * EventBridge Scheduler's schedule operations (REST-JSON, `/schedules/{Name}`),
 * on the schedule in its group; creating or updating one also passes its
 * target's role to Scheduler, which IAM checks as `iam:PassRole`.
 */
function scheduler(request: SignedRequest, scope: RequestScope): Authorization[] | undefined {
  const match = request.path.match(/^\/schedules\/([^/]+)$/);
  if (!match) return undefined;
  const operations: Record<string, string> = {
    POST: 'CreateSchedule',
    PUT: 'UpdateSchedule',
    DELETE: 'DeleteSchedule',
    GET: 'GetSchedule',
  };
  const op = operations[request.method.toUpperCase()];
  if (!op) return undefined;
  let body: Record<string, unknown> = {};
  try {
    body = request.body ? (JSON.parse(request.body) as Record<string, unknown>) : {};
  } catch {
    return undefined;
  }
  const query = request.query.groupName;
  const group = str(body.GroupName) ?? (typeof query === 'string' ? query : undefined) ?? 'default';
  const name = decodeURIComponent(match[1] as string);
  const authorizations: Authorization[] = [
    {
      action: `scheduler:${op}`,
      resource: `arn:aws:scheduler:${scope.region}:${scope.accountId}:schedule/${group}/${name}`,
    },
  ];
  const role = str((body.Target as { RoleArn?: unknown } | undefined)?.RoleArn);
  if (op === 'CreateSchedule' || op === 'UpdateSchedule') {
    if (!role) return undefined;
    authorizations.push({
      action: 'iam:PassRole',
      resource: role,
      context: { 'iam:PassedToService': 'scheduler.amazonaws.com' },
    });
  }
  return authorizations;
}

/**
 * EventBridge's PutEvents (AWS JSON 1.1, `AWSEvents.PutEvents`): `events:PutEvents`
 * on each bus its entries name, by name or ARN (none: the account's default
 * bus), as the Service Authorization Reference lists it
 * (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoneventbridge.html).
 */
function eventBridge(request: SignedRequest, scope: RequestScope): Authorization[] | undefined {
  const parsed = jsonOperation(request, 'AWSEvents');
  if (parsed?.op !== 'PutEvents' || !Array.isArray(parsed.body.Entries)) return undefined;
  const busArn = (bus: string | undefined) =>
    bus?.startsWith('arn:')
      ? bus
      : `arn:aws:events:${scope.region}:${scope.accountId}:event-bus/${bus ?? 'default'}`;
  const buses = new Set(
    (parsed.body.Entries as { EventBusName?: unknown }[]).map((entry) => busArn(str(entry?.EventBusName))),
  );
  return buses.size === 0
    ? undefined
    : [...buses].map((resource) => ({ action: 'events:PutEvents', resource }));
}

/** S3 Vectors' operations on an index, which IAM authorizes on the index (Index* in the Service Authorization Reference). */
const S3_VECTORS_ON_INDEX = new Set([
  'CreateIndex',
  'GetIndex',
  'DeleteIndex',
  'PutVectors',
  'GetVectors',
  'DeleteVectors',
  'ListVectors',
  'QueryVectors',
]);
/** Its operations on a vector bucket. */
const S3_VECTORS_ON_BUCKET = new Set([
  'CreateVectorBucket',
  'GetVectorBucket',
  'DeleteVectorBucket',
  'ListIndexes',
  'GetVectorBucketPolicy',
  'PutVectorBucketPolicy',
  'DeleteVectorBucketPolicy',
]);

/**
 * S3 Vectors (REST-JSON, `POST /<Operation>`), on the index or the bucket the
 * body names by ARN or by name
 * (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3vectors.html).
 * Some requests need a second action: a query that filters or returns
 * metadata, and a listing that returns data or metadata, also need
 * `s3vectors:GetVectors` (https://docs.aws.amazon.com/AmazonS3/latest/API/API_S3VectorBuckets_QueryVectors.html,
 * https://docs.aws.amazon.com/AmazonS3/latest/API/API_S3VectorBuckets_ListVectors.html);
 * making a bucket or an index with tags also needs `s3vectors:TagResource` on it.
 */
function s3vectors(request: SignedRequest, scope: RequestScope): Authorization[] | undefined {
  const op = /^\/([A-Za-z]+)$/.exec(request.path)?.[1];
  if (!op || request.method.toUpperCase() !== 'POST') return undefined;
  let body: Record<string, unknown>;
  try {
    const parsed = JSON.parse(request.body || '{}') as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
    body = parsed as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (op === 'ListVectorBuckets') return [{ action: 's3vectors:ListVectorBuckets', resource: '*' }];
  const bucketName = str(body.vectorBucketName);
  const bucketArn =
    str(body.vectorBucketArn) ??
    (bucketName ? `arn:aws:s3vectors:${scope.region}:${scope.accountId}:bucket/${bucketName}` : undefined);
  const indexName = str(body.indexName);
  const resource = S3_VECTORS_ON_INDEX.has(op)
    ? (str(body.indexArn) ?? (bucketArn && indexName ? `${bucketArn}/index/${indexName}` : undefined))
    : S3_VECTORS_ON_BUCKET.has(op)
      ? bucketArn
      : undefined;
  if (!resource) return undefined;
  const authorizations: Authorization[] = [{ action: `s3vectors:${op}`, resource }];
  const readsVectors =
    (op === 'QueryVectors' && (body.filter !== undefined || body.returnMetadata === true)) ||
    (op === 'ListVectors' && (body.returnData === true || body.returnMetadata === true));
  if (readsVectors) authorizations.push({ action: 's3vectors:GetVectors', resource });
  const tagged =
    (op === 'CreateVectorBucket' || op === 'CreateIndex') && Object.keys(body.tags ?? {}).length > 0;
  if (tagged) authorizations.push({ action: 's3vectors:TagResource', resource });
  return authorizations;
}

function manageConnections(request: SignedRequest, scope: RequestScope): Authorization[] | undefined {
  // `/{stage}/@connections/{id}`; the local endpoint's own stage stands for the template's.
  const match = request.path.match(/^(?:\/[^/]+)?\/@connections\/([^/]+)$/);
  const method = request.method.toUpperCase();
  if (!match?.[1] || !['POST', 'GET', 'DELETE'].includes(method)) return undefined;
  const { apiId, stage } = scope.webSocket;
  return [
    {
      action: 'execute-api:ManageConnections',
      resource: `arn:aws:execute-api:${scope.region}:${scope.accountId}:${apiId}/${stage}/${method}/@connections/${decodeURIComponent(match[1])}`,
    },
  ];
}

/**
 * Bedrock runtime's `InvokeModel` (`POST /model/{modelId}/invoke`, under the
 * endpoint's own path): `bedrock:InvokeModel` on the foundation model's ARN,
 * which has no account (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonbedrock.html).
 */
function bedrock(request: SignedRequest, scope: RequestScope): Authorization[] | undefined {
  const invoked = /\/model\/([^/]+)\/invoke$/.exec(request.path);
  if (request.method !== 'POST' || !invoked?.[1]) return undefined;
  const modelId = decodeURIComponent(invoked[1]);
  return [
    {
      action: 'bedrock:InvokeModel',
      resource: `arn:aws:bedrock:${scope.region}::foundation-model/${modelId}`,
    },
  ];
}
