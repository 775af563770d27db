import { RemovalPolicy } from 'aws-cdk-lib';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { PROVIDER_NAMES, PROVIDERS, type ProviderName } from '../../config/providers';
import { acknowledge } from '../nag';
import { providerIdSuffix } from '../provider-ids';

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
 * The credentials of Longhaul's webhook relationships, in Secrets Manager
 * (AWS-managed key), read by the handlers through a short in-memory cache so a
 * changed value reaches them within minutes, without a redeploy.
 *
 * One secret per provider (config/providers.ts), JSON `{apiKey, webhookSecret,
 * baseUrl?}`, created with an empty `apiKey` and a generated `webhookSecret`.
 * After the first deploy an operator puts the provider account's values
 * (`aws secretsmanager put-secret-value --secret-id <arn> --secret-string
 * '{…}'`): what each provider needs is in the secret's description. `baseUrl`
 * overrides the provider's base URL from the settings. Until then every
 * submission to that provider fails, and no job is charged.
 *
 * `webhookSecret` is the key that signs Longhaul's own webhooks to clients
 * (`Longhaul-Signature`); clients receive it out of band to verify them.
 */
export class ProviderSecrets extends Construct {
  /** Each provider's API key and webhook signing key, as JSON. */
  public readonly providerSecrets: { readonly [P in ProviderName]: Secret };
  /** The key Longhaul signs client webhooks with (a plain string). */
  public readonly webhookSecret: Secret;

  constructor(scope: Construct, id: string, props: ProviderSecretsProps = {}) {
    super(scope, id);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    this.providerSecrets = Object.fromEntries(
      PROVIDER_NAMES.map((provider) => {
        const spec = PROVIDERS[provider];
        const secret = new Secret(this, `ProviderSecret${providerIdSuffix(provider)}`, {
          description: `Longhaul provider ${spec.title}: JSON {apiKey, webhookSecret, baseUrl?}. ${spec.credentials}.`,
          generateSecretString: {
            secretStringTemplate: JSON.stringify({ apiKey: '' }),
            generateStringKey: 'webhookSecret',
            excludePunctuation: true,
            passwordLength: GENERATED_SECRET_LENGTH,
          },
          removalPolicy,
        });
        acknowledge(
          secret,
          'AwsSolutions-SMG4',
          spec.answers === 'at-once'
            ? `No automatic rotation: it holds no credential of ${spec.title}, which is called with the functions' IAM roles; only an optional base URL, and a generated webhook key nothing uses.`
            : `No automatic rotation: the API key is issued by ${spec.title} and the webhook key is registered with it (or issued by it), so a new value has to be made there first; operators rotate it there and then put the new value here, and the handlers pick it up within minutes.`,
        );
        return [provider, secret];
      }),
    ) as { [P in ProviderName]: Secret };

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
