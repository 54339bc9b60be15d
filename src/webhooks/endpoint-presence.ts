/**
 * Whether any webhook endpoint is registered, as this instance last read it. With none, the
 * worker's look for new events reads nothing (there is nobody to tell): it reads the endpoints
 * again at most every `staleMs`, and every sweep reads them until one is found, so that one added
 * through another instance is seen. One added through this instance counts at once, also while a
 * read that missed it is under way.
 */
export class EndpointPresence {
  /** undefined: not read yet, or one was removed since (read again). */
  private known: boolean | undefined;
  private readAt = 0;

  constructor(
    private readonly list: () => Promise<unknown[]>,
    private readonly staleMs: number,
  ) {}

  added(): void {
    this.known = true;
  }

  removed(): void {
    this.known = undefined;
  }

  /** A sweep's: reads them unless one is known. */
  async refresh(): Promise<void> {
    if (this.known !== true) await this.read();
  }

  /** A look's: false without a read while none was found less than `staleMs` ago. */
  async mayHaveSome(): Promise<boolean> {
    if (this.known !== false) return true;
    if (Date.now() - this.readAt < this.staleMs) return false;
    return this.read();
  }

  private async read(): Promise<boolean> {
    this.readAt = Date.now();
    const any = (await this.list()).length > 0;
    this.known ||= any;
    return this.known;
  }
}
