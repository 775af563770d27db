import { Readable } from 'node:stream';
import { runSimulation, type Simulation } from '@cloud-copilot/iam-simulate';
import { NodeHttp2Handler, NodeHttpHandler } from '@smithy/node-http-handler';
import type { HttpResponse } from '@smithy/types';
import { LOCAL_PSEUDO_PARAMETERS, resolveIntrinsics } from '../lib/workflow-definition';
import { LOCAL_API_ID } from './gateway/events';
import { LOCAL_REGION } from './handler-env';
import { type Authorization, authorizations, type RequestScope, signingService } from './iam-requests';
import { currentInvocation, LOCAL_ACCOUNT_ID } from './lambda';
import type { LocalTemplate, PolicyDocumentJson } from './template';

/**
 * IAM as AWS applies it to the functions: every AWS call a handler makes is
 * checked against the identity policies of that function's role, as the
 * template synthesizes them, with the template's references resolved to the
 * local resources. A denied call fails as the service fails it (its own
 * AccessDenied shape, so the SDK raises what it raises in AWS), and S3 answers
 * a missing key with 403 when the role may not list the bucket.
 *
 * The check wraps the SDK's Node HTTP handler, which every client the handlers
 * build sends through, so the handlers run unchanged. Calls made outside an
 * invocation (the local stack itself, tests, the simulator) are not checked.
 */

export interface IamDecision {
  readonly allowed: boolean;
  /** Why a request was refused, as AWS words it. */
  readonly message?: string;
}

/** A placeholder for resources with no local counterpart (log groups, functions): it matches no local request. */
const unresolvedArn = (logicalId: string) =>
  `arn:aws:cloudformation:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:unresolved/${logicalId}`;

/** Whether a value of {@link localReferences} is its placeholder: the reference has no local value. */
export const isUnresolved = (value: string): boolean => value.startsWith(unresolvedArn(''));

/**
 * The values the template's references take locally. The handlers find their
 * resources by environment variable, and the template sets each of those
 * variables with a `Ref` or `Fn::GetAtt`; the local stack sets the same
 * variables to the local resources, which ties each reference to its value.
 * What no variable names is derived from what one does (a table's ARN from
 * its name, an index's ARN from the names read off it), or left unresolved.
 */
export function localReferences(
  template: LocalTemplate,
  handlerEnvironment: Readonly<Record<string, string>>,
): (logicalId: string, attribute?: string) => string {
  const values = new Map<string, string>();
  /** Parts of a value the functions are told only a piece of: `Fn::Select` of its `Fn::Split` by "/". */
  const segments = new Map<string, Map<number, string>>();
  const keyOf = (node: { Ref?: unknown; 'Fn::GetAtt'?: unknown }): string | undefined => {
    if (typeof node?.Ref === 'string') return node.Ref;
    const att = node?.['Fn::GetAtt'];
    return Array.isArray(att) ? `${att[0]}.${att[1]}` : undefined;
  };
  for (const fn of template.functions()) {
    for (const [variable, value] of Object.entries(fn.environment)) {
      const local = handlerEnvironment[variable];
      const node = value as { Ref?: unknown; 'Fn::GetAtt'?: unknown; 'Fn::Select'?: unknown };
      if (local === undefined) continue;
      const key = keyOf(node);
      if (key !== undefined) values.set(key, local);
      const select = node?.['Fn::Select'];
      if (!Array.isArray(select)) continue;
      const [position, list] = select as [unknown, { 'Fn::Split'?: unknown } | undefined];
      const split = list?.['Fn::Split'];
      if (Array.isArray(split) && split[0] === '/' && typeof position === 'number') {
        const whole = keyOf(split[1] as { Ref?: unknown; 'Fn::GetAtt'?: unknown });
        if (whole !== undefined) {
          const parts = segments.get(whole) ?? new Map<number, string>();
          parts.set(position, local);
          segments.set(whole, parts);
        }
      }
    }
  }
  const reference = (logicalId: string, attribute?: string): string => {
    const key = attribute === undefined ? logicalId : `${logicalId}.${attribute}`;
    const known = values.get(key);
    if (known !== undefined) return known;
    const resource = template.json.Resources[logicalId];
    const type = resource?.Type;
    const ref = values.get(logicalId);
    if (type === 'AWS::DynamoDB::Table' && attribute === 'Arn' && ref) {
      return `arn:aws:dynamodb:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:table/${ref}`;
    }
    if (type === 'AWS::S3::Bucket' && attribute === 'Arn' && ref) return `arn:aws:s3:::${ref}`;
    if (type === 'AWS::SQS::Queue' && attribute === 'Arn' && ref) return queueArnOfUrl(ref);
    if (type === 'AWS::StepFunctions::StateMachine' && attribute === 'Name' && ref) {
      return ref.slice(ref.lastIndexOf(':') + 1);
    }
    if (type === 'AWS::ApiGatewayV2::Api' && attribute === undefined) return LOCAL_API_ID;
    // The functions are told a bus by name (its Ref); its ARN follows from the name.
    if (type === 'AWS::Events::EventBus' && attribute === 'Arn' && ref) {
      return `arn:aws:events:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:event-bus/${ref}`;
    }
    // The functions are told S3 Vectors' names, read off the ARNs (`…:bucket/<bucket>/index/<index>`);
    // the ARNs follow from the names. Ref and the ARN attribute are the same ARN.
    if (
      type === 'AWS::S3Vectors::VectorBucket' &&
      (attribute === undefined || attribute === 'VectorBucketArn')
    ) {
      const name = (segments.get(`${logicalId}.VectorBucketArn`) ?? segments.get(logicalId))?.get(1);
      if (name) return `arn:aws:s3vectors:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:bucket/${name}`;
    }
    if (type === 'AWS::S3Vectors::Index' && (attribute === undefined || attribute === 'IndexArn')) {
      const name = (segments.get(`${logicalId}.IndexArn`) ?? segments.get(logicalId))?.get(3);
      const bucket = resource?.Properties?.VectorBucketArn as { 'Fn::GetAtt'?: unknown } | undefined;
      const bucketId = bucket?.['Fn::GetAtt'];
      if (name && Array.isArray(bucketId)) {
        const bucketArn = reference(String(bucketId[0]), String(bucketId[1]));
        if (!isUnresolved(bucketArn)) return `${bucketArn}/index/${name}`;
      }
    }
    return unresolvedArn(logicalId);
  };
  return reference;
}

/** A queue's ARN from its URL (`<endpoint>/<account>/<name>`), as SQS names it. */
function queueArnOfUrl(url: string): string {
  const [account, name] = new URL(url).pathname.split('/').filter(Boolean);
  return `arn:aws:sqs:${LOCAL_REGION}:${account}:${name}`;
}

/** A policy document with every intrinsic replaced by its local value. */
export function resolvePolicy(
  document: PolicyDocumentJson,
  reference: (logicalId: string, attribute?: string) => string,
): PolicyDocumentJson {
  const lookup = (node: Readonly<Record<string, unknown>>): string | undefined => {
    if (typeof node.Ref === 'string' && !(node.Ref in LOCAL_PSEUDO_PARAMETERS)) return reference(node.Ref);
    const att = node['Fn::GetAtt'];
    if (Array.isArray(att)) return reference(String(att[0]), String(att[1]));
    const select = node['Fn::Select'];
    if (Array.isArray(select)) {
      const list = resolveIntrinsics(select[1], lookup);
      return Array.isArray(list) ? String(list[Number(select[0])]) : undefined;
    }
    const sub = node['Fn::Sub'];
    if (typeof sub === 'string') {
      return sub.replace(/\$\{([^}]+)\}/g, (_, name: string) => {
        if (name in LOCAL_PSEUDO_PARAMETERS) return LOCAL_PSEUDO_PARAMETERS[name] as string;
        const [id, attribute] = name.split('.');
        return reference(id as string, attribute);
      });
    }
    return undefined;
  };
  // Fn::Split yields a list, which resolveIntrinsics' lookup cannot return; resolve it first.
  const splitFirst = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(splitFirst);
    if (value === null || typeof value !== 'object') return value;
    const node = value as Record<string, unknown>;
    const split = node['Fn::Split'];
    if (Array.isArray(split)) {
      const text = resolveIntrinsics(splitFirst(split[1]), lookup);
      return String(text).split(String(split[0]));
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, splitFirst(v)]));
  };
  return resolveIntrinsics(splitFirst(document), lookup) as PolicyDocumentJson;
}

/** Decisions are cached: the policies have no conditions that vary per request. */
const MAX_CACHED_DECISIONS = 10_000;

/** One principal's identity policies, resolved, and what IAM decides on them. */
export class PrincipalPolicies {
  readonly #decisions = new Map<string, Promise<IamDecision>>();

  constructor(
    /** The principal AWS names in an AccessDenied message. */
    readonly principal: string,
    readonly policies: readonly PolicyDocumentJson[],
  ) {}

  /** Whether the principal may do `action` on `resource`. */
  decide({ action, resource, context = {} }: Authorization): Promise<IamDecision> {
    const key = `${action} ${resource} ${JSON.stringify(context)}`;
    let decision = this.#decisions.get(key);
    if (!decision) {
      if (this.#decisions.size >= MAX_CACHED_DECISIONS) this.#decisions.clear();
      decision = this.simulate(action, resource, context);
      this.#decisions.set(key, decision);
    }
    return decision;
  }

  private async simulate(
    action: string,
    resource: string,
    context: Readonly<Record<string, string>>,
  ): Promise<IamDecision> {
    const principal = this.principal;
    const simulation: Simulation = {
      identityPolicies: this.policies.map((policy, index) => ({ name: `policy${index}`, policy })),
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      request: {
        action,
        principal,
        resource: { accountId: LOCAL_ACCOUNT_ID, resource },
        contextVariables: { ...context },
      },
    } as Simulation;
    const result = await runSimulation(simulation, {});
    if (result.resultType === 'error') {
      return {
        allowed: false,
        message: `the IAM simulator refused the request: ${JSON.stringify(result.errors)}`,
      };
    }
    if (result.overallResult === 'Allowed') return { allowed: true };
    return {
      allowed: false,
      message: `User: ${principal} is not authorized to perform: ${action} on resource: ${resource} because no identity-based policy allows the ${action} action`,
    };
  }
}

/** The functions' policies, by service name, as the template attaches them to each function's role. */
export class IamPolicies {
  readonly #byService = new Map<string, PrincipalPolicies>();

  constructor(
    private readonly template: LocalTemplate,
    private readonly reference: (logicalId: string, attribute?: string) => string,
  ) {}

  /** The principal AWS names in an AccessDenied message for a function's calls. */
  principal(service: string): string {
    return this.of(service).principal;
  }

  policies(service: string): readonly PolicyDocumentJson[] {
    return this.of(service).policies;
  }

  /** Whether the function of `service` may do `action` on `resource`. */
  decide(service: string, authorization: Authorization): Promise<IamDecision> {
    return this.of(service).decide(authorization);
  }

  of(service: string): PrincipalPolicies {
    let found = this.#byService.get(service);
    if (!found) {
      found = new PrincipalPolicies(
        assumedRole(this.template.function(service).roleLogicalId, `longhaul-${service}`),
        this.template.rolePolicies(service).map((document) => resolvePolicy(document, this.reference)),
      );
      this.#byService.set(service, found);
    }
    return found;
  }
}

/** How AWS names a role's session in an AccessDenied message. */
export const assumedRole = (roleLogicalId: string, session: string): string =>
  `arn:aws:sts::${LOCAL_ACCOUNT_ID}:assumed-role/${roleLogicalId}/${session}`;

/** The answer the service gives a request IAM denies, in its own protocol. */
export function accessDeniedResponse(
  service: string | undefined,
  method: string,
  message: string,
): HttpResponse {
  const requestId = crypto.randomUUID();
  const respond = (statusCode: number, headers: Record<string, string>, body: string): HttpResponse => ({
    statusCode,
    headers: {
      'x-amzn-requestid': requestId,
      'content-length': String(Buffer.byteLength(body)),
      ...headers,
    },
    body: Readable.from(body === '' ? [] : [Buffer.from(body)]),
  });
  const coral = JSON.stringify({
    __type: 'com.amazon.coral.service#AccessDeniedException',
    Message: message,
  });
  switch (service) {
    case 's3': {
      // HEAD responses carry no body; the SDK reads the status alone, as it does from S3.
      const xml =
        method.toUpperCase() === 'HEAD'
          ? ''
          : `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>${escapeXml(message)}</Message><RequestId>${requestId}</RequestId></Error>`;
      return respond(403, { 'content-type': 'application/xml', 'x-amz-request-id': requestId }, xml);
    }
    case 'sqs':
      // SQS's JSON protocol keeps its query-protocol error code in a header, which the SDK names the error by.
      return respond(
        403,
        { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-query-error': 'AccessDenied;Sender' },
        coral,
      );
    case 'execute-api':
      return respond(
        403,
        { 'content-type': 'application/json', 'x-amzn-errortype': 'AccessDeniedException' },
        JSON.stringify({ message }),
      );
    case 'secretsmanager':
    case 'events':
      return respond(400, { 'content-type': 'application/x-amz-json-1.1' }, coral);
    case 's3vectors':
      // REST-JSON: the error's name in a header, its status the model's (403).
      return respond(
        403,
        { 'content-type': 'application/json', 'x-amzn-errortype': 'AccessDeniedException' },
        JSON.stringify({ message }),
      );
    default:
      return respond(400, { 'content-type': 'application/x-amz-json-1.0' }, coral);
  }
}

function escapeXml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

const utf8 = new TextDecoder();

const textBody = (body: unknown): string | undefined => {
  if (typeof body === 'string') return body;
  // TextDecoder reads the bytes alone; Buffer.from would call the SDK's string adapter's valueOf.
  if (body instanceof Uint8Array) return utf8.decode(body);
  return undefined;
};

/**
 * Checks every AWS request made inside an invocation against the invoked
 * function's role, until the returned function is called. Installed before the
 * handlers send anything.
 */
export function enforceIam(options: {
  readonly template: LocalTemplate;
  /** The environment the handlers run with (local/handler-env.ts). */
  readonly handlerEnvironment: Readonly<Record<string, string>>;
  readonly log: (line: string) => void;
}): () => void {
  const policies = new IamPolicies(
    options.template,
    localReferences(options.template, options.handlerEnvironment),
  );
  return checkRequests({
    scope: requestScope(options.template),
    // Calls made outside an invocation (the local stack itself, tests, the simulator) are not checked.
    principal: () => {
      const invocation = currentInvocation();
      return invocation && { name: invocation.fn.service, policies: policies.of(invocation.fn.service) };
    },
    log: options.log,
  });
}

/** The services' view of the local account: region, account and the WebSocket API the functions post to. */
export function requestScope(template: LocalTemplate): RequestScope {
  return {
    region: LOCAL_REGION,
    accountId: LOCAL_ACCOUNT_ID,
    webSocket: { apiId: LOCAL_API_ID, stage: template.webSocketStageName() },
  };
}

/**
 * Checks every AWS request this process sends through the SDK's Node HTTP
 * handler against the policies of the principal `principal()` names for it
 * (none: not checked), until the returned function is called.
 */
export function checkRequests(options: {
  readonly scope: RequestScope;
  readonly principal: () => { readonly name: string; readonly policies: PrincipalPolicies } | undefined;
  readonly log: (line: string) => void;
}): () => void {
  const { scope } = options;
  // HTTP/1.1, and HTTP/2, which the Bedrock runtime client speaks.
  const restores = [NodeHttpHandler.prototype, NodeHttp2Handler.prototype].map((prototype) => {
    const original = prototype.handle as NodeHttpHandler['handle'];
    const handle = checked(original);
    prototype.handle = handle;
    return () => {
      if (prototype.handle === handle) prototype.handle = original;
    };
  });
  return () => {
    for (const restore of restores) restore();
  };

  function checked(original: NodeHttpHandler['handle']) {
    return async function handle(
      this: NodeHttpHandler | NodeHttp2Handler,
      request: Parameters<NodeHttpHandler['handle']>[0],
      handlerOptions?: Parameters<NodeHttpHandler['handle']>[1],
    ): Promise<{ response: HttpResponse }> {
      const caller = options.principal();
      if (!caller) return original.call(this, request, handlerOptions);
      const service = signingService(request.headers);
      const { name: fn, policies } = caller;
      const wanted = authorizations(
        {
          method: request.method,
          path: request.path,
          query: request.query ?? {},
          headers: request.headers,
          body: textBody(request.body),
        },
        scope,
      );
      if (!wanted) {
        const message = `User: ${policies.principal} is not authorized to perform this request: the local stack cannot tell which IAM action ${request.method} ${request.path} (${service ?? 'unsigned'}) needs`;
        options.log(`IAM: ${fn}: ${message}`);
        return { response: accessDeniedResponse(service, request.method, message) };
      }
      for (const authorization of wanted) {
        const decision = await policies.decide(authorization);
        if (!decision.allowed) {
          options.log(`IAM: ${fn}: denied ${authorization.action} on ${authorization.resource}`);
          return {
            response: accessDeniedResponse(service, request.method, decision.message ?? 'Access Denied'),
          };
        }
      }
      const result = await original.call(this, request, handlerOptions);
      const read = wanted[0];
      if (service === 's3' && result.response.statusCode === 404 && read?.action === 's3:GetObject') {
        // S3 hides whether a key exists from a caller that may not list the bucket.
        const bucketArn = read.resource.slice(0, read.resource.indexOf('/'));
        const list = await policies.decide({ action: 's3:ListBucket', resource: bucketArn });
        if (!list.allowed) {
          (result.response.body as Readable | undefined)?.destroy?.();
          return { response: accessDeniedResponse(service, request.method, 'Access Denied') };
        }
      }
      return result;
    };
  }
}
