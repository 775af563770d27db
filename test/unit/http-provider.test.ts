import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpProvider } from '../../lambdas/adapters/http-provider';

/**
 * The adapter against a loopback server that misbehaves on purpose: each
 * failure must land in the right class, since that decides between retrying,
 * failing and asking a person.
 */

type Behaviour = (request: IncomingMessage, response: ServerResponse) => void;
let behaviour: Behaviour;
let server: Server;
let baseUrl: string;
const seen: { method?: string; url?: string; headers: IncomingMessage['headers']; body: string }[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      seen.push({
        method: request.method,
        url: request.url,
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
      });
      behaviour(request, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  seen.length = 0;
});

const provider = (url = baseUrl) =>
  new HttpProvider({
    baseUrl: url,
    apiKey: 'pk_test',
    deduplicates: true,
    submitTimeoutMs: 300,
    readTimeoutMs: 300,
  });
const submission = {
  idempotencyKey: 'job_x',
  type: 'image.generate' as const,
  input: { prompt: 'a cat' },
  webhookUrl: 'https://longhaul.example/v1/provider/events?jobId=job_x',
};
const answer =
  (status: number, body: unknown): Behaviour =>
  (_, response) => {
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };

describe('HttpProvider.submit', () => {
  it('posts the submission with the idempotency key and bearer key, and returns the id', async () => {
    behaviour = answer(201, { id: 'gen_1' });
    await expect(provider().submit(submission)).resolves.toEqual({ providerJobId: 'gen_1' });
    expect(seen[0]).toMatchObject({
      method: 'POST',
      url: '/v1/generations',
      headers: {
        'idempotency-key': 'job_x',
        authorization: 'Bearer pk_test',
        'content-type': 'application/json',
      },
    });
    expect(JSON.parse(seen[0]?.body ?? '')).toEqual({
      type: 'image.generate',
      input: { prompt: 'a cat' },
      webhookUrl: submission.webhookUrl,
    });
  });

  it.each([400, 401, 404, 409, 422])('treats %i as a definite rejection', async (status) => {
    behaviour = answer(status, { error: { code: 'bad' } });
    await expect(provider().submit(submission)).rejects.toMatchObject({
      name: 'ProviderRejected',
      code: `provider_rejected_${status}`,
    });
  });

  it.each([429, 503])('treats %i as unavailable (not accepted, retry later)', async (status) => {
    behaviour = answer(status, {});
    await expect(provider().submit(submission)).rejects.toMatchObject({ name: 'ProviderUnavailable' });
  });

  it('treats a refused connection as unavailable: nothing was sent', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await expect(provider(`http://127.0.0.1:${port}`).submit(submission)).rejects.toMatchObject({
      name: 'ProviderUnavailable',
    });
  });

  it('treats a reset after the request was written as ambiguous', async () => {
    behaviour = (request) => request.socket.destroy();
    await expect(provider().submit(submission)).rejects.toMatchObject({ name: 'ProviderAmbiguous' });
    expect(seen).toHaveLength(1);
  });

  it('treats a timeout after the request was written as ambiguous', async () => {
    behaviour = () => {
      // never answers
    };
    await expect(provider().submit(submission)).rejects.toMatchObject({ name: 'ProviderAmbiguous' });
  });

  it.each([500, 502, 504])('treats %i as ambiguous: the provider may have accepted', async (status) => {
    behaviour = answer(status, {});
    await expect(provider().submit(submission)).rejects.toMatchObject({ name: 'ProviderAmbiguous' });
  });

  it('treats a success without an id as ambiguous', async () => {
    behaviour = answer(201, { ok: true });
    await expect(provider().submit(submission)).rejects.toMatchObject({ name: 'ProviderAmbiguous' });
  });
});

describe('HttpProvider.status and cancel', () => {
  it('reads a status', async () => {
    behaviour = answer(200, { id: 'gen_1', status: 'running', progress: 40 });
    await expect(provider().status('gen_1')).resolves.toEqual({
      id: 'gen_1',
      status: 'running',
      progress: 40,
    });
    expect(seen[0]).toMatchObject({ method: 'GET', url: '/v1/generations/gen_1' });
  });

  it('reports every failure of a repeatable call as unavailable', async () => {
    behaviour = answer(500, {});
    await expect(provider().status('gen_1')).rejects.toMatchObject({ name: 'ProviderUnavailable' });
    behaviour = answer(200, { nonsense: true });
    await expect(provider().status('gen_1')).rejects.toMatchObject({ name: 'ProviderUnavailable' });
    behaviour = (request) => request.socket.destroy();
    await expect(provider().cancel('gen_1')).rejects.toMatchObject({ name: 'ProviderUnavailable' });
  });
});
