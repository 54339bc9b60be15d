import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WEBHOOK_EVENT_TYPES, WEBHOOK_EVENTS, type WebhookEventType } from '../../../src/events/catalogue.js';

// docs/operations.md "Webhooks" documents exactly the event types of `WEBHOOK_EVENTS`, each with
// every field of its `data`: a type added in the code without its row here fails.

/** The rows of the events table: the types of its first column, the backticked names of its second. */
function documentedEvents(): Map<string, Set<string>> {
  const page = readFileSync('docs/operations.md', 'utf8');
  const section = page.slice(
    page.indexOf('## Webhooks'),
    page.indexOf('\n## ', page.indexOf('## Webhooks') + 1),
  );
  const rows = new Map<string, Set<string>>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 4 || !cells[1]?.startsWith('`')) continue;
    const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    for (const type of names(cells[1])) rows.set(type, new Set(names(cells[2] ?? '')));
  }
  return rows;
}

describe('webhook event types in docs/operations.md', () => {
  const documented = documentedEvents();

  it('the events table lists exactly the types of WEBHOOK_EVENTS', () => {
    expect([...documented.keys()].sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort());
  });

  it.each(WEBHOOK_EVENT_TYPES)('%s: every field of its data is documented', (type: WebhookEventType) => {
    const fields: readonly string[] = WEBHOOK_EVENTS[type];
    expect(fields.filter((f) => !documented.get(type)?.has(f))).toEqual([]);
  });
});
