import { Duration } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { type FunctionUrl, FunctionUrlAuthType, InvokeMode } from 'aws-cdk-lib/aws-lambda';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { PROVIDER_OUTPUT_OBJECTS } from '../../config/layout';
import type { ProviderName } from '../../config/providers';
import type { Settings } from '../../config/settings';
import { handlerEntry } from '../handlers';
import { acknowledge, iam5ResourceFinding } from '../nag';
import { ProjectFunction } from './project-function';

export interface ProviderEventsProps {
  /** Longhaul settings, handed to the function as its environment. */
  readonly settings: Settings;
  /**
   * The job table: a tick's conditional write and, when it is refused, the
   * read of its job; a completion's read, recorded outcome and timeline event.
   * Single items only.
   */
  readonly jobTable: ITable;
  /** The output bucket: an output a provider hands over only with its completion is kept there for finalize. */
  readonly outputBucket: IBucket;
  /** Each provider's secret: the key its webhooks are verified with. */
  readonly providerSecrets: Readonly<Record<ProviderName, ISecret>>;

  /**
   * Entry file of the provider events handler.
   * @default lambdas/provider-events/handler.ts
   */
  readonly entry?: string;
}

/**
 * Where providers post their webhooks: a function with a Lambda function URL,
 * off the REST API. Progress ticks come about ten a second per running job,
 * and through the REST API each was a request billed at more than the
 * invocation it led to; a function URL costs nothing beyond the invocation.
 * Each provider posts under its own webhook route's path (config/layout.ts),
 * which tells the function whose signature to check.
 *
 * The URL's auth type is NONE: providers sign their webhooks (Deepgram's URL
 * is signed by Longhaul), and every request is verified by its provider's
 * adapter before anything of it is read, as on the REST API's routes. It is
 * buffered (6 MB each way), which a provider event never comes near.
 *
 * Nothing reserves concurrency for it: a reservation is taken from the
 * account's concurrency whether used or not (new accounts have little), and
 * as a cap it would throttle every provider's ticks and completions together
 * once reached. What keeps a flood of forged requests cheap is that each is
 * refused by its signature check, before any read, within a short timeout.
 */
export class ProviderEvents extends Construct {
  /** Verifies and applies providers' webhooks. */
  public readonly eventsFunction: ProjectFunction;
  /** The function's URL resource. */
  public readonly functionUrl: FunctionUrl;
  /**
   * The function's URL, as Lambda gives it (`https://<id>.lambda-url.<region>.on.aws/`):
   * a provider's webhook URL is its webhook route's path under it.
   */
  public readonly url: string;

  constructor(scope: Construct, id: string, props: ProviderEventsProps) {
    super(scope, id);
    this.eventsFunction = new ProjectFunction(this, 'EventsFunction', {
      entry: props.entry ?? handlerEntry('provider-events'),
      settings: props.settings,
      serviceName: 'provider-events',
      description: "Longhaul provider events: providers' signed progress and completion webhooks",
      // A tick is a write or a read; a completion adds an output copy and a resumed step.
      timeout: Duration.seconds(10),
    })
      .useTable('jobTable', props.jobTable, 'itemReadUpdate')
      .useProviderSecrets(props.providerSecrets)
      // A completion resumes the waiting step; progress keeps it alive.
      .allowTaskResponses();
    this.eventsFunction.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['s3:PutObject'],
        resources: [props.outputBucket.arnForObjects(PROVIDER_OUTPUT_OBJECTS)],
      }),
    );
    props.outputBucket.encryptionKey?.grantEncrypt(this.eventsFunction.role);
    acknowledge(
      this.eventsFunction.role,
      iam5ResourceFinding(this, props.outputBucket.bucketArn, `/${PROVIDER_OUTPUT_OBJECTS}`),
      "A provider's reported output is kept under its job, whose id is known only at run time; the grant is PutObject on those keys of this one bucket, nothing else of it.",
    );
    this.eventsFunction.setResourceEnv('outputBucket', props.outputBucket.bucketName);

    this.functionUrl = this.eventsFunction.lambdaFunction.addFunctionUrl({
      authType: FunctionUrlAuthType.NONE,
      invokeMode: InvokeMode.BUFFERED,
    });
    this.url = this.functionUrl.url;
  }
}
