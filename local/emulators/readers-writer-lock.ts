/**
 * Many holders sharing it, or one holding it alone. A waiter is served in
 * arrival order: once someone waits to hold it alone, later sharers queue
 * behind them, so a steady stream of sharers cannot starve an exclusive holder.
 */
export class ReadersWriterLock {
  private sharers = 0;
  private held = false;
  private readonly waiting: { readonly alone: boolean; readonly enter: () => void }[] = [];

  shared<T>(work: () => Promise<T>): Promise<T> {
    return this.hold(false, work);
  }

  exclusive<T>(work: () => Promise<T>): Promise<T> {
    return this.hold(true, work);
  }

  private async hold<T>(alone: boolean, work: () => Promise<T>): Promise<T> {
    if (this.waiting.length === 0 && this.free(alone)) this.enter(alone);
    else await new Promise<void>((enter) => this.waiting.push({ alone, enter }));
    try {
      return await work();
    } finally {
      if (alone) this.held = false;
      else this.sharers -= 1;
      this.admit();
    }
  }

  private free(alone: boolean): boolean {
    return !this.held && (!alone || this.sharers === 0);
  }

  private enter(alone: boolean): void {
    if (alone) this.held = true;
    else this.sharers += 1;
  }

  private admit(): void {
    for (let next = this.waiting[0]; next && this.free(next.alone); next = this.waiting[0]) {
      this.waiting.shift();
      this.enter(next.alone);
      next.enter();
    }
  }
}
