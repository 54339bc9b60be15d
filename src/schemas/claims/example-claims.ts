import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import type { ClaimsRecord, ClaimsStore } from '../../store/store.js';

export const ClaimsFileSchema = z.array(
  z.object({
    userId: z.string().min(1),
    schemaId: z.string().min(1),
    claims: z.record(z.string(), z.unknown()),
    expiresAt: z.iso.datetime({ offset: true }).optional(),
  }),
);

export function readClaimsFile(file: string): ClaimsRecord[] {
  const parsed = ClaimsFileSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${file}: ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data.map((r) => ({ ...r, expiresAt: r.expiresAt ? new Date(r.expiresAt) : null }));
}

/** Development only: an empty claims table gets the shipped examples so the demo works at once. */
export async function seedExampleClaims(store: ClaimsStore, file: string): Promise<number> {
  if (!existsSync(file) || (await store.countClaims()) > 0) return 0;
  return store.upsertClaims(readClaimsFile(file));
}
