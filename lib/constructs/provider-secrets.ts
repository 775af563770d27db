import { RemovalPolicy } from 'aws-cdk-lib';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { acknowledge } from '../nag';

/** Long enough for HMAC-SHA256 keys; letters and digits only, so the value survives any header or config file. */
const GENERATED_SECRET_LENGTH = 48;

export interface ProviderSecretsProps {
  /**
   * What happens to the secrets when they leave the stack. Deleting them would
   * break the provider integration and every client's signature check.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The credentials of Longhaul's two webhook relationships, in Secrets Manager
 * (AWS-managed key), read by the handlers through a short in-memory cache so a
 * changed value reaches them within minutes, without a redeploy.
 *
 * `providerSecret` is JSON `{baseUrl, apiKey, webhookSecret}`. It is created
 * with `baseUrl` `https://provider.invalid`, an empty `apiKey` and a generated
 * `webhookSecret`; after the first deploy an operator sets `baseUrl` and
 * `apiKey` to the provider account's values (`aws secretsmanager
 * put-secret-value --secret-id <ProviderSecretArn> --secret-string '{…}'`) and
 * registers `webhookSecret` with the provider as the key that signs its
 * webhooks, or replaces it with the key the provider issued. Until then every
 * submission fails at the provider, and no job is charged.
 *
 * `webhookSecret` is the key that signs Longhaul's own webhooks to clients
 * (`Longhaul-Signature`); clients receive it out of band to verify them.
 */
export class ProviderSecrets extends Construct {
  /** The media provider's base URL, API key and webhook signing key, as JSON. */
  public readonly providerSecret: Secret;
  /** The key Longhaul signs client webhooks with (a plain string). */
  public readonly webhookSecret: Secret;

  constructor(scope: Construct, id: string, props: ProviderSecretsProps = {}) {
    super(scope, id);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    this.providerSecret = new Secret(this, 'ProviderSecret', {
      description:
        'Longhaul media provider: JSON {baseUrl, apiKey, webhookSecret}. Set baseUrl and apiKey after the first deploy.',
      generateSecretString: {
        secretStringTemplate: JSON.stringify({ baseUrl: 'https://provider.invalid', apiKey: '' }),
        generateStringKey: 'webhookSecret',
        excludePunctuation: true,
        passwordLength: GENERATED_SECRET_LENGTH,
      },
      removalPolicy,
    });
    acknowledge(
      this.providerSecret,
      'AwsSolutions-SMG4',
      'No automatic rotation: the API key is issued by the media provider and the webhook key is registered with it, so a new value has to be made with the provider first; operators rotate it there and then put the new value here, and the handlers pick it up within minutes.',
    );

    this.webhookSecret = new Secret(this, 'WebhookSigningSecret', {
      description: 'Longhaul client webhook signing key (Longhaul-Signature v1 HMAC-SHA256).',
      generateSecretString: { excludePunctuation: true, passwordLength: GENERATED_SECRET_LENGTH },
      removalPolicy,
    });
    acknowledge(
      this.webhookSecret,
      'AwsSolutions-SMG4',
      'No automatic rotation: clients verify webhooks with this key, so a new key must reach every client before it signs anything. Operators rotate it deliberately; the signature header may carry several v1 signatures (the verifier accepts any that matches), so during a rotation webhooks can be signed with the old and the new key side by side.',
    );
  }
}
