import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { AppError, notFound } from '../errors.js';
import type { AuditActor } from '../model.js';
import type { CompromisedKeyStore } from '../store/compromised-key-store.js';
import type { NamedLockStore } from '../store/store.js';
import type { KeyHolder } from './key-holder.js';

/** The playbook's answer (`POST /admin/keys/compromised`). */
export interface CompromiseAnswer {
  kid: string;
  /** The key signed new credentials when the playbook ran (so it rotated away from it). */
  active: boolean;
  /** The key was recorded compromised before this call (a repeat answers the first run's outcome). */
  alreadyCompromised: boolean;
  credentials: number;
  compromised: true;
  rotatedTo: string | null;
  jobId: string;
  statusListsRepublished: number;
}

/** What the playbook drives; the parts above `keys/` (rotation, status lists, jobs) come as functions. */
export interface CompromisePlaybookDeps {
  keys: Pick<KeyHolder, 'current' | 'reload'>;
  compromisedKeys: CompromisedKeyStore;
  locks: NamedLockStore;
  /** A rotation of the credential-signing key (audit row, `key.rotated`, lists re-signed). */
  rotate(actor: AuditActor): Promise<{ kid: string; statusListsRepublished: number }>;
  /** Re-signs every status list partition; answers how many. */
  publishAll(): Promise<number>;
  /** Records `key.compromised` after `compromisedKeys.mark` recorded the kid. */
  compromisedEvent(kid: string, actor: AuditActor & { reason: string }, at: Date): Promise<void>;
  /** Starts the bulk job revoking what `kid` signed. */
  revokeJob(kid: string, actor: AuditActor & { reason: string }): Promise<{ id: string; total: number }>;
  /** The job's total, for a repeat's answer. */
  jobTotal(jobId: string): Promise<number | undefined>;
}

// A run holds its kid's lock for its rotation, re-signing and job selection: the lease is renewed
// while it works, so only a process that died loses it (and frees it when the lease ends).
const LEASE_MS = 30_000;
const WAIT_MS = 120_000;

/** The kid's signing key, refusing an unknown one (404) and a standby key (409). */
export function compromisedKeyOf(keys: Pick<KeyHolder, 'current'>, kid: string) {
  const key = keys.current().signingKeys.find((k) => k.kid === kid);
  if (!key) throw notFound(`kid: no credential-signing key ${kid}`);
  if (key.standby)
    throw new AppError(
      'CONFLICT',
      `kid: ${kid} is a standby key that has signed nothing; remove it instead (and prepare another)`,
      { field: 'kid' },
    );
  return key;
}

/**
 * docs/operations.md "A signing key is compromised", step 3, once per kid: runs one at a time per
 * kid among every process on the database (a named lock, and a queue within the process), and a
 * run that finds the kid's outcome recorded answers it (same `rotatedTo`, same `jobId`) instead of
 * rotating and revoking again.
 */
export function compromisePlaybook(deps: CompromisePlaybookDeps) {
  const queues = new Map<string, Promise<unknown>>();
  return (kid: string, actor: AuditActor & { reason: string }): Promise<CompromiseAnswer> => {
    compromisedKeyOf(deps.keys, kid);
    const previous = queues.get(kid) ?? Promise.resolve();
    const run = previous.then(() =>
      locked(deps.locks, `key-compromised:${kid}`, () => once(deps, kid, actor)),
    );
    const tail = run.catch(() => undefined);
    queues.set(kid, tail);
    void tail.then(() => {
      if (queues.get(kid) === tail) queues.delete(kid);
    });
    return run;
  };
}

async function once(
  deps: CompromisePlaybookDeps,
  kid: string,
  actor: AuditActor & { reason: string },
): Promise<CompromiseAnswer> {
  const done = await deps.compromisedKeys.outcome(kid);
  if (done)
    return {
      kid,
      active: done.rotatedTo !== null,
      alreadyCompromised: true,
      credentials: (await deps.jobTotal(done.jobId)) ?? 0,
      compromised: true,
      rotatedTo: done.rotatedTo,
      jobId: done.jobId,
      statusListsRepublished: done.statusListsRepublished,
    };
  // Read afresh: another instance may have rotated since this one loaded its ring.
  const ring = await deps.keys.reload();
  const active = ring.signing.kid === kid;
  // 1. No new credential is signed with it: rotate away first (in x5c mode a standby key with a
  //    chain must exist, else 409 and nothing else is done).
  const rotated = active ? await deps.rotate(actor) : undefined;
  // 2. Never published again, by any instance, from its next read of the metadata.
  const now = new Date();
  const marked = await deps.compromisedKeys.mark(kid, now, actor);
  if (marked) await deps.compromisedEvent(kid, actor, now);
  // 3. The lists re-signed by a key still trusted (a rotation did it already).
  const lists = rotated ? rotated.statusListsRepublished : await deps.publishAll();
  // 4. Everything it signed revoked, as one bulk job.
  const job = await deps.revokeJob(kid, actor);
  const outcome = { rotatedTo: rotated?.kid ?? null, statusListsRepublished: lists, jobId: job.id };
  await deps.compromisedKeys.recordOutcome(kid, outcome);
  return {
    kid,
    active,
    alreadyCompromised: !marked,
    credentials: job.total,
    compromised: true,
    ...outcome,
  };
}

/** Runs `fn` holding `name` among the processes sharing `locks`, renewing its lease meanwhile. */
async function locked<T>(locks: NamedLockStore, name: string, fn: () => Promise<T>): Promise<T> {
  const owner = randomUUID();
  const deadline = Date.now() + WAIT_MS;
  for (let attempt = 1; !(await locks.tryAcquire(name, owner, LEASE_MS)); attempt++) {
    if (Date.now() > deadline)
      throw new AppError('UNAVAILABLE', 'another instance is running the playbook for this key; retry');
    await delay(Math.min(500, 20 * attempt) * (0.5 + Math.random() / 2));
  }
  const heartbeat = setInterval(
    () => void locks.renew(name, owner, LEASE_MS).catch(() => undefined),
    LEASE_MS / 3,
  );
  heartbeat.unref();
  try {
    return await fn();
  } finally {
    clearInterval(heartbeat);
    // The run's outcome stands whatever the release does: a lock not released frees itself when
    // its lease ends.
    await locks.release(name, owner).catch(() => undefined);
  }
}
