import type * as z from 'zod';
import type { ProviderName, ProviderRequests } from '../providers';

/**
 * What a job type is: one module under `config/job-types/`, registered in
 * `config/job-types/index.ts`. Everything else (request validation, multipart
 * rules, the API document, the SDK's types, the CLI's flags, metric
 * dimensions, the dashboard, the provider a job runs on and what it is sent)
 * is derived from these modules. Plain TypeScript and zod: the CDK stack, the
 * local stack and the handlers all read them.
 */

/** What a request mapping may ask for while it builds the provider's request. */
export interface RequestContext {
  /** A time-limited GET URL of one of the tenant's uploads, for a provider that fetches its input. */
  inputUrl(ref: string): Promise<string>;
  /**
   * A time-limited GET URL of an object the job's workflow stored under the
   * job (a chunk the parent job cut); a key outside the job's outputs is refused.
   */
  outputUrl(key: string): Promise<string>;
  /** The text of an object the job's workflow stored under the job, refused as `outputUrl` refuses. */
  readOutput(key: string): Promise<string>;
}

/** A file the job produced: stored under the job in the output bucket, handed out as a fresh presigned URL. */
export interface OutputFile {
  /**
   * The result field it becomes: stored as `<field>Key` (the object key) and
   * shown to clients as `<field>Url`.
   */
  readonly field: string;
  readonly fileName: string;
  readonly contentType: string;
  /** A provider URL is copied at once: providers delete outputs (Replicate after an hour). */
  readonly content: { readonly bytes: Uint8Array } | { readonly text: string } | { readonly url: string };
}

/** An output file of JSON: `value` as its text. */
export const jsonFile = (field: string, fileName: string, value: unknown): OutputFile => ({
  field,
  fileName,
  contentType: 'application/json',
  content: { text: JSON.stringify(value) },
});

/** What a finished provider job becomes: files to keep and the rest of the result. */
export interface JobOutput {
  readonly files: readonly OutputFile[];
  readonly result: Readonly<Record<string, unknown>>;
}

/** How a job type runs on one provider. */
export interface ProviderBinding<P extends ProviderName> {
  request(input: Readonly<Record<string, unknown>>, context: RequestContext): Promise<ProviderRequests[P]>;
  /** The provider's output as the job's output; throws OutputInvalidError when it is unusable. */
  output(raw: unknown, input: Readonly<Record<string, unknown>>): JobOutput;
}

/** The input a job takes from an upload or a multipart file part (at most one per job type). */
export interface FileSource {
  /** The input field a multipart `file` part fills with its upload ref. */
  readonly refField: string;
  /** Another input field that names the same source (an https URL); a file part excludes it too. */
  readonly urlField?: string;
  /** Media types the file may have, as a `type/*` pattern (`image/*`). */
  readonly mediaTypes: `${string}/*`;
}

export interface JobTypeModule<Name extends string = string> {
  readonly name: Name;
  readonly description: string;
  /** A strict object schema: unknown fields are an error, not silently ignored. */
  readonly input: z.ZodType<Record<string, unknown>>;
  /** What clients see as the job's result (output keys already presented as URLs). */
  readonly result: z.ZodType<Record<string, unknown>>;
  /** The names the API document gives the input and result schemas. */
  readonly schemaNames: { readonly input: string; readonly result: string };
  readonly file?: FileSource;
  /** The provider jobs of this type run on unless `PROVIDER_<JOB_TYPE>` names another. */
  readonly provider: ProviderName;
  /** How the job runs on each provider it supports. */
  readonly providers: { readonly [P in ProviderName]?: ProviderBinding<P> };
  /**
   * How long a job of this type may run at the provider before it is stopped
   * and reviewed (the reconciler's job timeout).
   * @default JOB_TIMEOUT_MS
   */
  readonly timeoutMs?: number;
  /**
   * How the workflow runs a job of this type. `submission` (the default): one
   * provider submission, holding one slot of the provider from dispatch to the
   * provider's answer. `publish`: compute steps around a fan-out of chunk jobs
   * (`audio.publish`); the job holds no slot itself, each chunk job holds one.
   */
  readonly flow?: 'submission' | 'publish';
  /**
   * Made by another job's workflow, never by a client (a chunk of
   * `audio.publish`): the API neither accepts nor lists jobs of this type.
   */
  readonly internal?: true;
  /**
   * Jobs started when a job of this type succeeds, each submitted through
   * intake as the tenant's own submission would be (its quota, fair share and
   * idempotency), under the key `follow-up:<parent job id>:<name>`: however
   * often the parent's last step runs, each follow-up is made once. Checked
   * when the modules load (`checkFollowUps`).
   * @default - none
   */
  readonly followUps?: readonly FollowUp[];
}

/** A job a job type starts when one of its jobs succeeds. */
export interface FollowUp {
  /** Unique among the type's follow-ups (`[a-z0-9-]`, at most 63): the last part of the follow-up's key. */
  readonly name: string;
  /** The follow-up's job type: one clients may submit. */
  readonly jobType: string;
  /**
   * The follow-up's input from the parent's input and result (as stored: an
   * output file is its `<field>Key`). It must satisfy the follow-up's input
   * schema; one that does not is recorded on the parent and not submitted.
   */
  input(parent: {
    readonly input: Readonly<Record<string, unknown>>;
    readonly result: Readonly<Record<string, unknown>>;
  }): Record<string, unknown>;
}

const FOLLOW_UP_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * Throws unless every follow-up names a job type clients may submit, has a
 * well-formed name unique within its type, and no chain of follow-ups comes
 * back to where it started (which would start jobs forever).
 */
export function checkFollowUps(modules: readonly JobTypeModule[]): void {
  const byName = new Map(modules.map((module) => [module.name, module]));
  for (const module of modules) {
    const names = new Set<string>();
    for (const followUp of module.followUps ?? []) {
      const where = `job type ${module.name}: follow-up ${JSON.stringify(followUp.name)}`;
      if (!FOLLOW_UP_NAME.test(followUp.name)) {
        throw new Error(`${where}: a name is 1..63 of a-z, 0-9 and -, starting with a letter or digit`);
      }
      if (names.has(followUp.name)) throw new Error(`${where}: the name is used twice`);
      names.add(followUp.name);
      const target = byName.get(followUp.jobType);
      if (!target || target.internal) {
        throw new Error(`${where}: ${JSON.stringify(followUp.jobType)} is no job type clients may submit`);
      }
    }
  }
  const visiting = new Set<string>();
  const done = new Set<string>();
  const visit = (name: string, path: readonly string[]): void => {
    if (done.has(name)) return;
    if (visiting.has(name)) throw new Error(`follow-ups start jobs forever: ${[...path, name].join(' → ')}`);
    visiting.add(name);
    for (const followUp of byName.get(name)?.followUps ?? []) visit(followUp.jobType, [...path, name]);
    visiting.delete(name);
    done.add(name);
  };
  for (const module of modules) visit(module.name, []);
}

/** Declares a job type; the identity, for type checking. */
export const defineJobType = <Name extends string>(module: JobTypeModule<Name>): JobTypeModule<Name> =>
  module;

/** An output that cannot become a result: the job fails with `output_invalid`. */
export class OutputInvalidError extends Error {
  override readonly name = 'OutputInvalid';
}

/** Whether a media type matches a `type/*` pattern. */
export const mediaTypeMatches = (pattern: `${string}/*`, mediaType: string): boolean =>
  mediaType.toLowerCase().startsWith(pattern.slice(0, -1).toLowerCase()) &&
  /^[\w.+-]+\/[\w.+-]+$/.test(mediaType);
