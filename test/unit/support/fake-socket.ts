import type { WebSocketLike } from '../../../client/wait';

type Listener = (event: { data?: unknown }) => void;

/** A WebSocket a test drives: open it, push messages, drop it; it records what the client sent and closed. */
export class FakeSocket implements WebSocketLike {
  static instances: FakeSocket[] = [];
  readonly listeners = new Map<string, Listener[]>();
  readonly sent: string[] = [];
  closedByClient = false;

  constructor(readonly url: string) {
    FakeSocket.instances.push(this);
  }

  addEventListener(type: string, listener: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  send(data: string): void {
    this.sent.push(data);
  }

  close(): void {
    this.closedByClient = true;
  }

  emit(type: 'open' | 'error' | 'close' | 'message', data?: unknown): void {
    for (const listener of this.listeners.get(type) ?? []) listener({ data });
  }
}

/** Polls `condition` every few milliseconds; throws if it is not met within two seconds. */
export async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 2000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met within 2 s');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
