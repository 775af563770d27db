import { deliverSignedWebhook } from '../../lambdas/shared/webhooks';

/** In AWS, client webhooks never reach loopback or private addresses, whatever the job was created with. */
describe('deliverSignedWebhook', () => {
  const fetchSpy = jest.spyOn(globalThis, 'fetch');
  afterAll(() => fetchSpy.mockRestore());
  beforeEach(() => fetchSpy.mockReset());

  it.each([
    'http://127.0.0.1:9000/hook',
    'https://127.0.0.1/hook',
    'https://localhost/hook',
    'https://10.0.0.5/hook',
    'https://169.254.169.254/latest/meta-data',
    'https://[::1]/hook',
  ])('refuses %s without sending anything when private targets are not allowed', async (url) => {
    await expect(
      deliverSignedWebhook({
        url,
        body: '{}',
        secret: 'a-webhook-secret-0123',
        timeoutMs: 1000,
        allowPrivate: false,
      }),
    ).resolves.toBe('refused');
    expect(fetchSpy).not.toHaveBeenCalled();
  });

  it('signs and sends to an allowed target, and reports a non-2xx answer as a failed delivery', async () => {
    fetchSpy.mockResolvedValueOnce(new Response(null, { status: 204 }));
    await expect(
      deliverSignedWebhook({
        url: 'http://127.0.0.1:9000/hook',
        body: '{"id":"job_x"}',
        secret: 'a-webhook-secret-0123',
        timeoutMs: 1000,
        allowPrivate: true,
      }),
    ).resolves.toBe('sent');
    const headers = (fetchSpy.mock.calls[0]?.[1]?.headers ?? {}) as Record<string, string>;
    expect(headers['longhaul-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);

    fetchSpy.mockResolvedValueOnce(new Response(null, { status: 500 }));
    await expect(
      deliverSignedWebhook({
        url: 'http://127.0.0.1:9000/hook',
        body: '{}',
        secret: 'a-webhook-secret-0123',
        timeoutMs: 1000,
        allowPrivate: true,
      }),
    ).rejects.toMatchObject({ name: 'WebhookDeliveryFailed' });
  });
});
