import type fc from 'fast-check';

/**
 * Who makes a port call: one Lambda invocation, one webhook delivery, one
 * reconciler pass. An actor that crashed makes no further call: its next
 * awaited port call never returns, as when the process dies between two awaits.
 */
export class Actor {
  private calls = 0;
  private crashedWith: (() => void) | undefined;
  /** Settles when the actor crashes, so whoever waits on it (the execution driver) learns it. */
  readonly crashed: Promise<void>;
  halted = false;

  constructor(
    readonly label: string,
    /** Crash just before this many port calls were made (undefined: never by itself). */
    private readonly crashAfterCalls?: number,
    /** The provider job an event handler acts for, so outcomes it records can be traced to it. */
    readonly providerJobId?: string,
    /** When Lambda stops it (its function timeout), on the world's clock. */
    private readonly deadline = Number.POSITIVE_INFINITY,
  ) {
    this.crashed = new Promise((resolve) => {
      this.crashedWith = resolve;
    });
  }

  crash(): void {
    if (this.halted) return;
    this.halted = true;
    this.crashedWith?.();
  }

  /** Counts a call made at `now`; false once the actor is halted. */
  proceed(now: number): boolean {
    if (!this.halted && this.crashAfterCalls !== undefined && this.calls >= this.crashAfterCalls)
      this.crash();
    if (now > this.deadline) this.crash();
    this.calls++;
    return !this.halted;
  }
}

/**
 * A fault armed for the next call of one port method: `before` throws without
 * the call taking effect, `after` lets it take effect and then throws (the
 * caller cannot tell a write that happened from one that did not).
 */
export interface Fault {
  readonly port: string;
  readonly method: string;
  readonly when: 'before' | 'after';
}

export class Faults {
  private armed: Fault[] = [];
  stopped = false;
  /** Faults that fired, for the counterexample's story. */
  readonly fired: string[] = [];

  arm(fault: Fault): void {
    if (!this.stopped) this.armed.push(fault);
  }

  stop(): void {
    this.stopped = true;
    this.armed = [];
  }

  take(port: string, method: string): Fault | undefined {
    const index = this.armed.findIndex((fault) => fault.port === port && fault.method === method);
    if (index < 0) return undefined;
    const [fault] = this.armed.splice(index, 1);
    this.fired.push(`${port}.${method} (${fault?.when})`);
    return fault;
  }
}

export class InjectedFault extends Error {
  override readonly name = 'InjectedFault';
}

/** One port call as the invariants and the counterexample's story see it. */
export interface PortCall {
  readonly port: string;
  readonly method: string;
  readonly args: unknown[];
  readonly actor: Actor;
  /** Set when an armed fault hit this call: `before`, it had no effect. */
  readonly fault?: 'before' | 'after';
  /** What the port answered (before an `after` fault replaced it with an error). */
  readonly result?: unknown;
}

const never = <T>() => new Promise<T>(() => {});

/**
 * Wraps a port so every call is a point where the scheduler may run anything
 * else first, then applies armed faults, then calls the port. `observe` runs
 * after each call took effect (the invariants that must hold at every step).
 */
export function scheduled<T extends object>(
  port: T,
  portName: string,
  context: {
    readonly scheduler: fc.Scheduler;
    readonly actor: Actor;
    readonly faults: Faults;
    readonly observe: (call: PortCall) => void;
    readonly now: () => number;
  },
): T {
  const { scheduler, actor, faults, observe, now } = context;
  return new Proxy(port, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      return async (...args: unknown[]) => {
        await scheduler.schedule(Promise.resolve(), `${actor.label} ▶ ${portName}.${property}`);
        if (!actor.proceed(now())) return never();
        const fault = faults.take(portName, property);
        const call = {
          port: portName,
          method: property,
          args,
          actor,
          ...(fault ? { fault: fault.when } : {}),
        };
        if (fault?.when === 'before') {
          observe(call);
          throw new InjectedFault(`${portName}.${property} failed`);
        }
        const result = await value.apply(target, args);
        observe({ ...call, result });
        if (fault?.when === 'after') throw new InjectedFault(`${portName}.${property} failed after writing`);
        return result;
      };
    },
  });
}
