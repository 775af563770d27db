/**
 * How a command line offers a job type's input: the types of the table
 * client/job-types.ts generates (JOB_TYPE_INPUTS), written once here, where
 * the generator and the CLI read them too.
 */

/** One input field of a job type, as a command line offers it. */
export interface InputField {
  /** The field's name in the input. */
  readonly name: string;
  /** Its flag, without the dashes: `audioUrl` is `--audio-url`. */
  readonly flag: string;
  /** Its JSON type, or its items' for a list; `json` when it is none of the others (given as JSON text). */
  readonly type: 'string' | 'integer' | 'number' | 'boolean' | 'json';
  /** A list: its flag is given once per item (`--label a --label b`), and names one item. */
  readonly repeated?: true;
  readonly required: boolean;
  readonly description?: string;
}

/** A job type's input as a command line offers it. */
export interface JobTypeInput {
  readonly description?: string;
  readonly fields: readonly InputField[];
  /** The field a file fills with its upload ref (the SDK's `file`, the CLI's `--file`); absent when the type takes no file. */
  readonly fileField?: string;
}
