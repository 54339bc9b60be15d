import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/index.js';
import {
  CREDENTIAL_DELIVERIES_SQL,
  deliveriesPageSql,
  WAITING_EVENTS_SQL,
} from '../../src/store/sqlite/sqlite-webhook-rows.js';
import type { DeliveryQuery } from '../../src/store/webhook-store.js';

/**
 * The SQLite webhook reads the console and the admin API make are read through an index: a
 * credential's deliveries (webhook_events_credential, keyed by the credential's created_at then
 * its id since migration 018), an endpoint's delivery pages, and the events waiting for fan-out.
 * The plans of the statements the store runs; none reads a whole table or a whole index.
 */
describe('webhook query plans: SQLite', () => {
  let store: SqliteStore;
  beforeAll(() => {
    store = openSqliteStore(':memory:');
  });
  afterAll(() => store.close());
  const plan = (sql: string, params: unknown) =>
    store.db
      .prepare(`EXPLAIN QUERY PLAN ${sql}`)
      .all(params as Record<string, unknown>)
      .map((r) => (r as { detail: string }).detail);
  /** Every read of the webhook tables is a search of an index (`scan`: or a walk of a partial one). */
  const throughIndexes = (steps: string[], scan?: string) => {
    for (const step of steps.filter((d) => /\bwebhook_(events|deliveries)\b/.test(d)))
      if (scan && step.startsWith('SCAN')) expect(step).toContain(`USING INDEX ${scan}`);
      else expect(step).toMatch(/^SEARCH .* USING (.*INDEX|INTEGER PRIMARY KEY)/);
  };

  it("a credential's deliveries: through webhook_events_credential, newest event first", () => {
    const steps = plan(CREDENTIAL_DELIVERIES_SQL, { id: 'c-1', limit: 50 });
    throughIndexes(steps);
    expect(steps.join('\n')).toContain('webhook_events_credential (credential_at=? AND <expr>=?)');
    // The credential's created_at is read by its primary key.
    expect(steps.join('\n')).toMatch(/SEARCH issuances USING INDEX sqlite_autoindex_issuances/);
  });

  it.each<[Pick<DeliveryQuery, 'state' | 'before'>, string]>([
    [{}, 'webhook_deliveries_page'],
    [{ before: 10 }, 'webhook_deliveries_page'],
    [{ state: 'failed' as const }, 'webhook_deliveries_state_page'],
    [{ state: 'pending' as const, before: 10 }, 'webhook_deliveries_state_page'],
  ])("an endpoint's deliveries %o: through %s in sort order", (q, index) => {
    const steps = plan(deliveriesPageSql(q), {
      endpointId: 'ep_1',
      take: 26,
      state: q.state,
      before: q.before,
    });
    throughIndexes(steps);
    expect(steps.join('\n')).toContain(index);
    expect(steps.join('\n')).not.toMatch(/TEMP B-TREE/);
  });

  it('the events waiting for fan-out: through webhook_events_pending, oldest first', () => {
    const steps = plan(WAITING_EVENTS_SQL, [32]);
    throughIndexes(steps, 'webhook_events_pending');
    expect(steps.join('\n')).toContain('webhook_events_pending');
    expect(steps.join('\n')).not.toMatch(/TEMP B-TREE/);
  });
});
