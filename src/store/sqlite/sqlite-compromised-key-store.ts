import type { CompromisedKey, CompromisedKeyStore, CompromiseOutcome } from '../compromised-key-store.js';
import type { AuditActor } from '../store.js';
import type { SqliteDatabase } from './database.js';
import { SqliteAuditStore } from './sqlite-audit-store.js';

interface Row {
  kid: string;
  at: string;
  actor: string;
  reason: string;
}

/** The `compromised_keys` table of migration 015. */
export class SqliteCompromisedKeyStore implements CompromisedKeyStore {
  private readonly stmts;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly audit = new SqliteAuditStore(db),
  ) {
    this.stmts = {
      list: db.prepare<[], Row>('SELECT kid, at, actor, reason FROM compromised_keys ORDER BY at, kid'),
      insert: db.prepare(
        'INSERT INTO compromised_keys (kid, at, actor, reason) VALUES (?, ?, ?, ?) ON CONFLICT (kid) DO NOTHING',
      ),
      outcome: db.prepare<
        [string],
        { rotated_to: string | null; lists_republished: number | null; job_id: string }
      >(
        'SELECT rotated_to, lists_republished, job_id FROM compromised_keys WHERE kid = ? AND job_id IS NOT NULL',
      ),
      recordOutcome: db.prepare<[string | null, number, string, string]>(
        'UPDATE compromised_keys SET rotated_to = ?, lists_republished = ?, job_id = ? WHERE kid = ?',
      ),
    } as const;
  }

  async list(): Promise<CompromisedKey[]> {
    return this.stmts.list.all().map((r) => ({ ...r, at: new Date(r.at) }));
  }

  async mark(kid: string, at: Date, audit: AuditActor & { reason: string }): Promise<boolean> {
    return this.db
      .transaction(() => {
        if (this.stmts.insert.run(kid, at.toISOString(), audit.actor, audit.reason).changes === 0)
          return false;
        this.audit.insertAudit({ ...audit, at, action: 'keys.compromised', target: kid });
        return true;
      })
      .immediate();
  }

  async outcome(kid: string): Promise<CompromiseOutcome | undefined> {
    const row = this.stmts.outcome.get(kid);
    return row
      ? { rotatedTo: row.rotated_to, statusListsRepublished: row.lists_republished ?? 0, jobId: row.job_id }
      : undefined;
  }

  async recordOutcome(kid: string, outcome: CompromiseOutcome): Promise<void> {
    this.stmts.recordOutcome.run(outcome.rotatedTo, outcome.statusListsRepublished, outcome.jobId, kid);
  }
}
