import { createHash, randomBytes } from 'node:crypto';
import * as z from 'zod';

/**
 * Stream tickets: short-lived, job-scoped credentials for the live-progress
 * WebSocket, so no API key ever travels in a URL (browsers cannot set headers
 * on a WebSocket handshake, and URLs end up in logs and proxies).
 *
 * A ticket is 256 random bits; only its SHA-256 is stored, beside the job, with
 * the tenant and job it opens and its expiry. Stored rather than signed: it
 * needs no signing secret of its own (nor its rotation), a leaked table read
 * yields no usable ticket, and both functions involved already read the job
 * table. A ticket may be used again until it expires, so a client whose
 * handshake failed half-way can retry it; a reconnect after that asks anew.
 */

export const STREAM_TICKET_PREFIX = 'lhst_';
export const STREAM_TICKET_PATTERN = /^lhst_[A-Za-z0-9_-]{43}$/;

export interface StreamTicketRecord {
  /** SHA-256 (hex) of the ticket. */
  readonly ticketHash: string;
  readonly tenantId: string;
  readonly jobId: string;
  /** Epoch seconds. */
  readonly expiresAt: number;
}

/** Where tickets are kept (one adapter: the job table). */
export interface StreamTicketStore {
  put(record: StreamTicketRecord): Promise<void>;
  get(ticketHash: string): Promise<StreamTicketRecord | undefined>;
}

/** Long enough to connect with, short enough that a ticket seen in a log is already dead. */
export const STREAM_TICKET_TTL_SECONDS = 60;

/** A ticket as POST /v1/jobs/{id}/stream-ticket answers it. */
export const issuedStreamTicket = z
  .object({
    ticket: z.string().regex(STREAM_TICKET_PATTERN),
    expiresAt: z.string().meta({ format: 'date-time' }),
    streamUrl: z.url().describe('The WebSocket URL (AWS: the stack output StreamUrl).'),
  })
  .meta({
    description: `Opens the live-progress WebSocket for one job: connect to \`streamUrl?ticket=<ticket>\` before expiresAt (${STREAM_TICKET_TTL_SECONDS} s). Ask for a new ticket for each (re)connection.`,
  });
export type IssuedStreamTicket = Readonly<z.infer<typeof issuedStreamTicket>>;

export function hashStreamTicket(ticket: string): string {
  return createHash('sha256').update(ticket, 'utf8').digest('hex');
}

/** Issues a ticket to the job's tenant; the caller has checked that the job is the tenant's. */
export async function issueStreamTicket(
  deps: { readonly tickets: StreamTicketStore; readonly now: () => Date },
  grant: { readonly tenantId: string; readonly jobId: string; readonly streamUrl: string },
  ttlSeconds: number,
): Promise<IssuedStreamTicket> {
  const ticket = `${STREAM_TICKET_PREFIX}${randomBytes(32).toString('base64url')}`;
  const expiresAtMs = deps.now().getTime() + ttlSeconds * 1000;
  await deps.tickets.put({
    ticketHash: hashStreamTicket(ticket),
    tenantId: grant.tenantId,
    jobId: grant.jobId,
    expiresAt: Math.ceil(expiresAtMs / 1000),
  });
  return { ticket, expiresAt: new Date(expiresAtMs).toISOString(), streamUrl: grant.streamUrl };
}

/**
 * The grant a ticket carries, or undefined for a malformed, unknown or expired
 * one. Expiry is checked here: storage TTL removes items only eventually.
 */
export async function redeemStreamTicket(
  deps: { readonly tickets: StreamTicketStore; readonly now: () => Date },
  ticket: string,
): Promise<{ readonly tenantId: string; readonly jobId: string } | undefined> {
  if (!STREAM_TICKET_PATTERN.test(ticket)) return undefined;
  const record = await deps.tickets.get(hashStreamTicket(ticket));
  if (!record || record.expiresAt * 1000 <= deps.now().getTime()) return undefined;
  return { tenantId: record.tenantId, jobId: record.jobId };
}
