import { jobEventIdOf, jobEventOf } from '../../lambdas/domain/events';
import { type Job, newJob } from '../../lambdas/domain/job';
import { deliverSignedWebhook } from '../../lambdas/shared/webhooks';

const EVENT_ID = 'evt_0123456789abcdefghijkl';

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
        eventId: EVENT_ID,
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
        eventId: EVENT_ID,
        timeoutMs: 1000,
        allowPrivate: true,
      }),
    ).resolves.toBe('sent');
    const headers = (fetchSpy.mock.calls[0]?.[1]?.headers ?? {}) as Record<string, string>;
    expect(headers['longhaul-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(headers['longhaul-event-id']).toBe(EVENT_ID);

    fetchSpy.mockResolvedValueOnce(new Response(null, { status: 500 }));
    await expect(
      deliverSignedWebhook({
        url: 'http://127.0.0.1:9000/hook',
        body: '{}',
        secret: 'a-webhook-secret-0123',
        eventId: EVENT_ID,
        timeoutMs: 1000,
        allowPrivate: true,
      }),
    ).rejects.toMatchObject({ name: 'WebhookDeliveryFailed' });
  });
});

/** The event id a client webhook carries: one per job and status, so a retried delivery repeats it. */
describe('jobEventIdOf', () => {
  const job = (overrides: Partial<Job>): Job => ({
    ...newJob(
      {
        id: 'job_hookhookhookhookhookhookho',
        tenantId: 'acme',
        type: 'image.generate',
        input: { prompt: 'x' },
        idempotencyKey: 'k1',
        fingerprint: 'f1',
      },
      new Date('2026-12-06T04:00:00.000Z'),
    ),
    finishedAt: '2026-12-06T05:00:00.000Z',
    ...overrides,
  });

  it("is the id of the status's lifecycle event, the same for every read of that status", () => {
    const succeeded = job({ status: 'succeeded' });
    expect(jobEventIdOf(succeeded)).toMatch(/^evt_[A-Za-z0-9_-]{22}$/);
    expect(jobEventIdOf(succeeded)).toBe(jobEventOf(succeeded)?.detail.eventId);
    expect(jobEventIdOf({ ...succeeded, updatedAt: '2026-12-06T05:00:09.000Z' })).toBe(
      jobEventIdOf(succeeded),
    );
  });

  it('differs for another status, another job, or the same status reached again after a requeue', () => {
    const id = jobEventIdOf(job({ status: 'succeeded' }));
    expect(
      new Set([
        id,
        jobEventIdOf(job({ status: 'failed' })),
        jobEventIdOf(job({ status: 'succeeded', id: 'job_otherotherotherotherothero' })),
        jobEventIdOf(job({ status: 'succeeded', resubmissions: 1 })),
      ]).size,
    ).toBe(4);
  });
});
