import { MAX_PARTS, MIN_PART_BYTES, planParts } from '../../lambdas/domain/multipart-uploads';
import {
  hashStreamTicket,
  issueStreamTicket,
  redeemStreamTicket,
  STREAM_TICKET_PATTERN,
  type StreamTicketRecord,
  type StreamTicketStore,
} from '../../lambdas/domain/stream-tickets';

/** Stream tickets and multipart upload plans, in the domain, over an in-memory store. */

function memoryTickets() {
  const records = new Map<string, StreamTicketRecord>();
  const store: StreamTicketStore = {
    put: async (record) => {
      records.set(record.ticketHash, record);
    },
    get: async (hash) => records.get(hash),
  };
  return { store, records };
}

describe('stream tickets', () => {
  const grant = { tenantId: 'acme', jobId: 'job_aaaaaaaaaaaaaaaaaaaaaaaaaa', streamUrl: 'wss://s.test/live' };

  it('are stored only as a hash, and open their job to their tenant until they expire', async () => {
    const { store, records } = memoryTickets();
    let now = new Date('2026-01-01T00:00:00.000Z');
    const deps = { tickets: store, now: () => now };
    const issued = await issueStreamTicket(deps, grant, 60);
    expect(issued).toEqual({
      ticket: expect.stringMatching(STREAM_TICKET_PATTERN),
      expiresAt: '2026-01-01T00:01:00.000Z',
      streamUrl: 'wss://s.test/live',
    });
    expect([...records.values()]).toEqual([
      {
        ticketHash: hashStreamTicket(issued.ticket),
        tenantId: 'acme',
        jobId: grant.jobId,
        expiresAt: 1767225660,
      },
    ]);
    expect(JSON.stringify([...records.values()])).not.toContain(issued.ticket);

    expect(await redeemStreamTicket(deps, issued.ticket)).toEqual({ tenantId: 'acme', jobId: grant.jobId });
    now = new Date('2026-01-01T00:00:59.999Z');
    expect(await redeemStreamTicket(deps, issued.ticket)).toEqual({ tenantId: 'acme', jobId: grant.jobId });
    // The table's TTL removes items only eventually: expiry is checked on use.
    now = new Date('2026-01-01T00:01:00.000Z');
    expect(await redeemStreamTicket(deps, issued.ticket)).toBeUndefined();
  });

  it('are different every time, and a guessed or malformed one opens nothing', async () => {
    const { store } = memoryTickets();
    const deps = { tickets: store, now: () => new Date() };
    const tickets = await Promise.all(Array.from({ length: 20 }, () => issueStreamTicket(deps, grant, 60)));
    expect(new Set(tickets.map((t) => t.ticket)).size).toBe(20);
    for (const guess of [`lhst_${'a'.repeat(43)}`, 'lhst_short', '', tickets[0]!.ticket.toUpperCase()]) {
      expect(await redeemStreamTicket(deps, guess)).toBeUndefined();
    }
  });
});

describe('multipart upload plans', () => {
  const MiB = 1024 * 1024;

  it('cut a file into equal parts of at least 8 MiB but the last', () => {
    expect(planParts(200 * MiB)).toEqual({
      partSizeBytes: MIN_PART_BYTES,
      parts: Array.from({ length: 25 }, (_, i) => ({ partNumber: i + 1, contentLength: 8 * MiB })),
    });
    const odd = planParts(17 * MiB + 5);
    expect(odd.parts.map((p) => p.contentLength)).toEqual([8 * MiB, 8 * MiB, MiB + 5]);
    expect(planParts(1).parts).toEqual([{ partNumber: 1, contentLength: 1 }]);
  });

  it('grow the parts of a huge file to stay within S3’s part count', () => {
    const size = 5 * 1024 * MiB * 20;
    const plan = planParts(size);
    expect(plan.parts.length).toBeLessThanOrEqual(MAX_PARTS);
    expect(plan.partSizeBytes % MiB).toBe(0);
    expect(plan.parts.reduce((sum, p) => sum + p.contentLength, 0)).toBe(size);
  });
});
