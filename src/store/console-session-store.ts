/** A signed-in console session (the cookie's value is never stored, only its SHA-256). */
export interface ConsoleSessionRecord {
  actor: string;
  /** The fingerprint of the admin key that opened it (null: a console sign-in recorded before migrations 022/027 added the column). */
  keyHash: string | null;
  createdAt: Date;
  lastSeenAt: Date;
}

/** When a console session ends: `idleMs` after its last request, `absoluteMs` after its sign-in. */
export interface ConsoleSessionLimits {
  idleMs: number;
  absoluteMs: number;
}

/** The admin console's sign-ins, shared by every instance. */
export interface ConsoleSessionStore {
  create(idHash: string, actor: string, keyHash: string, at: Date): Promise<void>;
  /**
   * The live console sign-in under `idHash`, its last request moved to `now`; undefined when there is none
   * or it has ended (idle or too old), and then it is removed.
   */
  use(idHash: string, now: Date, limits: ConsoleSessionLimits): Promise<ConsoleSessionRecord | undefined>;
  /** Removes the session under `idHash`; answers whether there was one. */
  end(idHash: string): Promise<boolean>;
  /** The live console sign-ins (not idle, not too old), oldest first, with their `idHash`. */
  list(now: Date, limits: ConsoleSessionLimits): Promise<Array<ConsoleSessionRecord & { idHash: string }>>;
  /** Removes every console sign-in that has ended; answers how many. */
  endExpired(now: Date, limits: ConsoleSessionLimits): Promise<number>;
}
