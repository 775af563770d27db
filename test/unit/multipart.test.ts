import type { APIGatewayProxyEvent } from 'aws-lambda';
import { parseMultipartJob } from '../../lambdas/api/multipart';
import { PayloadTooLargeError, ValidationError } from '../../lambdas/domain/errors';

const policy = { allowPrivateWebhooks: false, scheduleMaxAheadDays: 365, now: () => new Date() };

async function eventOf(form: FormData): Promise<APIGatewayProxyEvent> {
  const request = new Request('http://localhost/', { method: 'POST', body: form });
  const body = Buffer.from(await request.arrayBuffer());
  return {
    headers: { 'Content-Type': request.headers.get('content-type') ?? '' },
    body: body.toString('base64'),
    isBase64Encoded: true,
  } as unknown as APIGatewayProxyEvent;
}

describe('parseMultipartJob', () => {
  it('reads the fields and the file part', async () => {
    const form = new FormData();
    form.set('type', 'image.generate');
    form.set('input', JSON.stringify({ prompt: 'like this' }));
    form.set('file', new Blob([new Uint8Array([137, 80, 78, 71])], { type: 'image/png' }), 'cat.png');

    const { request, file } = await parseMultipartJob(await eventOf(form), policy);

    expect(request).toEqual({ type: 'image.generate', input: { prompt: 'like this' } });
    expect(file).toEqual({ bytes: new Uint8Array([137, 80, 78, 71]), contentType: 'image/png' });
  });

  it('reads a priority field, and refuses one that is not a priority', async () => {
    const form = new FormData();
    form.set('type', 'image.generate');
    form.set('input', JSON.stringify({ prompt: 'soon' }));
    form.set('priority', 'interactive');
    await expect(parseMultipartJob(await eventOf(form), policy)).resolves.toEqual({
      request: { type: 'image.generate', input: { prompt: 'soon' }, priority: 'interactive' },
    });

    form.set('priority', 'urgent');
    await expect(parseMultipartJob(await eventOf(form), policy)).rejects.toMatchObject({
      errors: [{ pointer: '/priority', detail: 'must be one of interactive, standard, batch' }],
    });
  });

  it('accepts an audio job whose only source is the file part', async () => {
    const form = new FormData();
    form.set('type', 'audio.transcribe');
    form.set('input', JSON.stringify({ language: 'en' }));
    form.set('file', new Blob([new Uint8Array([73, 68, 51])], { type: 'audio/mpeg' }), 'talk.mp3');

    const { request, file } = await parseMultipartJob(await eventOf(form), policy);

    expect(request).toEqual({ type: 'audio.transcribe', input: { language: 'en' } });
    expect(file?.contentType).toBe('audio/mpeg');
  });

  it('still refuses an audio job without any source', async () => {
    const form = new FormData();
    form.set('type', 'audio.transcribe');
    form.set('input', JSON.stringify({ language: 'en' }));
    await expect(parseMultipartJob(await eventOf(form), policy)).rejects.toThrow(ValidationError);
  });

  it('refuses unknown and repeated parts', async () => {
    const form = new FormData();
    form.set('type', 'image.generate');
    form.append('input', '{"prompt":"a"}');
    form.append('input', '{"prompt":"b"}');
    form.set('extra', 'x');
    await expect(parseMultipartJob(await eventOf(form), policy)).rejects.toMatchObject({
      errors: [
        { pointer: '/input', detail: 'must appear once' },
        { pointer: '/extra', detail: 'unknown part' },
      ],
    });
  });

  it('refuses input that is not JSON', async () => {
    const form = new FormData();
    form.set('type', 'image.generate');
    form.set('input', '{prompt:');
    await expect(parseMultipartJob(await eventOf(form), policy)).rejects.toMatchObject({
      errors: [{ pointer: '/input', detail: 'must be a JSON object' }],
    });
  });

  it('refuses a file part over 4 MiB', async () => {
    const form = new FormData();
    form.set('type', 'image.generate');
    form.set('input', '{"prompt":"a"}');
    form.set('file', new Blob([new Uint8Array(4 * 1024 * 1024 + 1)], { type: 'image/png' }), 'big.png');
    await expect(parseMultipartJob(await eventOf(form), policy)).rejects.toThrow(PayloadTooLargeError);
  });

  it('refuses a malformed body', async () => {
    const event = {
      headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
      body: Buffer.from('not multipart at all').toString('base64'),
      isBase64Encoded: true,
    } as unknown as APIGatewayProxyEvent;
    await expect(parseMultipartJob(event, policy)).rejects.toThrow(ValidationError);
  });
});
