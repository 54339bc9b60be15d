import type { SdJwtIssuerMode } from '../issuer-urls.js';
import type { AuditActor } from '../model.js';
import type { AuditStore } from '../store/audit-store.js';
import type { KeyHolder } from './key-holder.js';
import type { KeyPurpose, ManagedKey } from './key-ring.js';
import { type RotationConfig, x5cRotation } from './rotation-certificate.js';

/** What a rotation did: the key that signs from `at` on, the ones it retired, the lists re-signed. */
export interface RotationOutcome {
  purpose: KeyPurpose;
  at: Date;
  created: ManagedKey;
  retired: ManagedKey[];
  statusListsRepublished: number;
}

/** What a rotation drives; the parts above `keys/` (the event, the status lists) come as functions. */
export interface KeyRotationDeps {
  keys: Pick<KeyHolder, 'rotate'>;
  identity: { readonly mode: SdJwtIssuerMode; readonly origin: string };
  config: RotationConfig;
  audit: Pick<AuditStore, 'record'>;
  /** Records `key.rotated` (docs/operations.md "Webhooks") for a rotation whose keys did not. */
  rotatedEvent(purpose: KeyPurpose, created: string, retired: string[], at: Date): Promise<void>;
  /** Re-signs every status list partition with the new key; answers how many. */
  publishAll(): Promise<number>;
}

/**
 * Key rotation (`POST /admin/keys/rotate`, and the compromise playbook's): retires the active key
 * of a purpose, adds a new one that signs from now on, records it in the audit log and as an
 * event, and re-signs the status lists with the new key.
 */
export class KeyRotation {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: KeyRotationDeps) {}

  /**
   * A rotation after the ones this instance was asked for before it: one at a time in this process;
   * across instances the key store serializes them (a PostgreSQL advisory lock), so two at once
   * never each retire the other's new key.
   */
  inTurn(purpose: KeyPurpose, actor: AuditActor): Promise<RotationOutcome> {
    const run = this.queue.then(() => this.rotate(purpose, actor));
    this.queue = run.catch(() => {});
    return run;
  }

  /** A rotation: the key change, its audit row and `key.rotated` event, the lists re-signed. */
  async rotate(purpose: KeyPurpose, actor: AuditActor): Promise<RotationOutcome> {
    const now = new Date();
    const x5c =
      purpose === 'credential-signing' ? x5cRotation(this.deps.identity, this.deps.config, now) : undefined;
    const { retired, created, eventRecorded } = await this.deps.keys.rotate(purpose, now, x5c);
    // Key files (SQLite) are not in a database transaction: their event is written once the new
    // key is in place. Key rows (PostgreSQL) wrote it in the rotation's transaction.
    await this.deps.audit.record({ ...actor, at: now, action: 'keys.rotate', target: created.kid });
    if (!eventRecorded)
      await this.deps.rotatedEvent(
        purpose,
        created.kid,
        retired.map((k) => k.kid),
        now,
      );
    const statusListsRepublished = purpose === 'credential-signing' ? await this.deps.publishAll() : 0;
    return { purpose, at: now, created, retired, statusListsRepublished };
  }
}
