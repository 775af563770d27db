import type { APIGatewayProxyEvent } from 'aws-lambda';
import { isJobType } from '../../config/job-types';
import { bodyLimits } from '../../config/settings';
import { PayloadTooLargeError, ValidationError } from '../domain/errors';
import type { InputFile } from '../domain/intake';
import { type CreateJobRequest, fileSourceOf, parseCreateJob, type RequestPolicy } from '../domain/requests';
import { bodyBytes, header, parseJson } from './http';

const FIELDS = new Set(['type', 'input', 'webhookUrl', 'priority', 'runAt', 'startBy', 'file']);

/**
 * Reads a `multipart/form-data` job request: text fields `type`, `input` (JSON
 * text) and optional `webhookUrl`, `priority`, `runAt` and `startBy`, and an optional `file` part. Parsing uses
 * the runtime's own WHATWG FormData implementation.
 */
export async function parseMultipartJob(
  event: APIGatewayProxyEvent,
  policy: RequestPolicy,
): Promise<{ request: CreateJobRequest; file?: InputFile }> {
  const bytes = bodyBytes(event);
  if (bytes.length > bodyLimits.multipartBytes) {
    throw new PayloadTooLargeError(`Multipart bodies are limited to ${bodyLimits.multipartBytes} bytes.`);
  }
  let form: FormData;
  try {
    form = await new Response(bytes, {
      headers: { 'content-type': header(event, 'content-type') ?? '' },
    }).formData();
  } catch {
    throw new ValidationError('The multipart/form-data body is malformed.');
  }
  const errors: { pointer: string; detail: string }[] = [];
  const names = new Set(form.keys());
  for (const name of names) {
    if (!FIELDS.has(name)) errors.push({ pointer: `/${name}`, detail: 'unknown part' });
    else if (form.getAll(name).length > 1) errors.push({ pointer: `/${name}`, detail: 'must appear once' });
  }
  const text = (name: string): string | undefined => {
    const value = form.get(name);
    if (value === null) return undefined;
    if (typeof value !== 'string') {
      errors.push({ pointer: `/${name}`, detail: 'must be a text field, not a file' });
      return undefined;
    }
    return value;
  };
  const type = text('type');
  const inputText = text('input');
  const webhookUrl = text('webhookUrl');
  const priority = text('priority');
  const runAt = text('runAt');
  const startBy = text('startBy');
  const filePart = form.get('file');
  if (filePart !== null && typeof filePart === 'string')
    errors.push({ pointer: '/file', detail: 'must be a file' });
  if (errors.length > 0) throw new ValidationError('The multipart/form-data body is invalid.', errors);

  let input: unknown;
  if (inputText !== undefined) {
    try {
      input = parseJson(Buffer.from(inputText, 'utf8'));
    } catch {
      throw new ValidationError('The multipart/form-data body is invalid.', [
        { pointer: '/input', detail: 'must be a JSON object' },
      ]);
    }
  }
  const hasFile = filePart !== null && typeof filePart !== 'string';
  const body = {
    type,
    input,
    ...(webhookUrl !== undefined ? { webhookUrl } : {}),
    ...(priority !== undefined ? { priority } : {}),
    ...(runAt !== undefined ? { runAt } : {}),
    ...(startBy !== undefined ? { startBy } : {}),
  };
  const request = parseWithFile(body, hasFile, policy);
  if (!hasFile) return { request };
  if (filePart.size > bodyLimits.fileBytes) {
    throw new PayloadTooLargeError(`The file part is limited to ${bodyLimits.fileBytes} bytes.`);
  }
  if (filePart.size === 0) {
    throw new ValidationError('The multipart/form-data body is invalid.', [
      { pointer: '/file', detail: 'is empty' },
    ]);
  }
  return {
    request,
    file: {
      bytes: new Uint8Array(await filePart.arrayBuffer()),
      contentType: filePart.type || 'application/octet-stream',
    },
  };
}

/** Stands in for the file's ref while the input is validated; the real ref is derived from the file's bytes. */
const FILE_REF_PLACEHOLDER = `upl_${'0'.repeat(32)}`;

/**
 * Validates the request as it will be once the file part has become its ref:
 * an audio job with a file has its source, though `audioRef` is not in the
 * form. Input that names a source of its own is validated as sent, so the
 * conflict with the file is reported by the intake.
 */
function parseWithFile(
  body: { readonly type: string | undefined; readonly input: unknown },
  hasFile: boolean,
  policy: RequestPolicy,
): CreateJobRequest {
  const { type, input } = body;
  const source = type !== undefined && isJobType(type) ? fileSourceOf(type) : undefined;
  const field = source?.refField;
  const record =
    typeof input === 'object' && input !== null && !Array.isArray(input)
      ? (input as Record<string, unknown>)
      : undefined;
  const ownSource =
    record &&
    (record[field ?? ''] !== undefined || (source?.urlField && record[source.urlField] !== undefined));
  if (!hasFile || !field || !record || ownSource) return parseCreateJob(body, policy);
  const parsed = parseCreateJob({ ...body, input: { ...record, [field]: FILE_REF_PLACEHOLDER } }, policy);
  const { [field]: _placeholder, ...rest } = parsed.input;
  return { ...parsed, input: rest };
}
