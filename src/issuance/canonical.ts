import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every depth, so equal claims hash equally whatever their order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      );
    }
    return v;
  });
}

export const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');
