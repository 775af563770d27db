import type { Page } from './types';

/**
 * A listing that yields items across pages, fetching each page when it is
 * reached: `for await (const job of client.listJobs())`. Pages are there too
 * (`.pages()`), and `.toArray({ limit })` collects at most `limit` items.
 */
export class PagedList<T> implements AsyncIterable<T> {
  constructor(
    /** One page after `cursor`; `want` (when known) is how many more items the caller needs. */
    private readonly fetchPage: (cursor: string | undefined, want: number | undefined) => Promise<Page<T>>,
    private readonly firstCursor: string | undefined = undefined,
  ) {}

  /** The pages in order, each as the API answered it (its `nextCursor` included). */
  pages(): AsyncGenerator<Page<T>, void, undefined> {
    return this.pagesUpTo(undefined);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.items;
  }

  /** Every item, or the first `limit`; asks for no more than it needs. */
  async toArray(options: { readonly limit?: number } = {}): Promise<T[]> {
    return (await this.take(options.limit)).items;
  }

  /**
   * Up to `limit` items, and the cursor to go on from (null when nothing is
   * left). Pages are asked for no larger than what is still needed, so no
   * item is skipped between the last one taken and the cursor.
   */
  async take(limit?: number): Promise<{ items: T[]; nextCursor: string | null }> {
    const items: T[] = [];
    let nextCursor: string | null = null;
    if (limit !== undefined && limit <= 0) return { items, nextCursor };
    for await (const page of this.pagesUpTo(limit)) {
      items.push(...page.items);
      nextCursor = page.nextCursor;
      if (limit !== undefined && items.length >= limit) break;
    }
    // A server that answers more than asked for: keep the promise of `limit`.
    if (limit !== undefined && items.length > limit) items.length = limit;
    return { items, nextCursor };
  }

  private async *pagesUpTo(limit: number | undefined): AsyncGenerator<Page<T>, void, undefined> {
    let cursor = this.firstCursor;
    let seen = 0;
    do {
      const page = await this.fetchPage(cursor, limit === undefined ? undefined : limit - seen);
      seen += page.items.length;
      yield page;
      cursor = page.nextCursor ?? undefined;
    } while (cursor && (limit === undefined || seen < limit));
  }
}
