import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { downloadToFile } from '../../lambdas/adapters/http-download';
import { AssetUnavailableError, InvalidJobInputError } from '../../lambdas/domain/errors';

/** Downloads of a compute step's input from a local server. */

let server: Server;
let base: string;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'longhaul-download-'));
  server = createServer((request, response) => {
    if (request.url === '/to-http') {
      response.writeHead(302, { location: 'http://169.254.170.2/v2/credentials/x', connection: 'close' });
      response.end();
      return;
    }
    const status = Number(request.url?.slice(1));
    response.statusCode = Number.isInteger(status) && status > 0 ? status : 200;
    // Each download on its own connection, as separate compute steps make them.
    response.setHeader('connection', 'close');
    response.end(response.statusCode === 200 ? Buffer.alloc(1 << 16, 7) : 'no');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

it('streams the answer into the file', async () => {
  const file = path.join(dir, 'input');
  await downloadToFile(`${base}/audio`, file, 5000);
  expect(await readFile(file)).toEqual(Buffer.alloc(1 << 16, 7));
});

it.each([403, 404, 410])('fails the job as input_not_found on %i', async (status) => {
  const failure = downloadToFile(`${base}/${status}`, path.join(dir, `x${status}`), 5000);
  await expect(failure).rejects.toBeInstanceOf(InvalidJobInputError);
  await expect(failure).rejects.toMatchObject({ code: 'input_not_found' });
});

it.each([500, 503])('leaves %i to a retry', async (status) => {
  await expect(downloadToFile(`${base}/${status}`, path.join(dir, 'y'), 5000)).rejects.toBeInstanceOf(
    AssetUnavailableError,
  );
});

it('leaves an unreachable host to a retry', async () => {
  await expect(downloadToFile('http://127.0.0.1:1/audio', path.join(dir, 'z'), 5000)).rejects.toBeInstanceOf(
    AssetUnavailableError,
  );
});

it('refuses a redirect to plain http, where metadata endpoints answer', async () => {
  const failure = downloadToFile(`${base}/to-http`, path.join(dir, 'r'), 5000);
  await expect(failure).rejects.toMatchObject({
    code: 'input_not_found',
    message: '[input_not_found] The input redirects to a http URL; only https is followed, at most 5 times.',
  });
});
