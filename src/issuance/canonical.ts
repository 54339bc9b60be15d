import { createHash } from 'node:crypto';

type Frame =
  | { kind: 'array'; items: unknown[]; next: number }
  | { kind: 'object'; entries: Array<[string, unknown]>; next: number };

const byKey = ([a]: [string, unknown], [b]: [string, unknown]): number => (a < b ? -1 : a > b ? 1 : 0);
const omitted = (v: unknown): boolean => v === undefined || typeof v === 'function' || typeof v === 'symbol';

/**
 * JSON with object keys sorted at every depth, so equal claims hash equally whatever their order.
 * Iterative (an explicit stack), so no input nests deep enough to overflow the call stack; the
 * output is `JSON.stringify`'s for the same value with sorted keys (toJSON, omitted members).
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  const stack: Frame[] = [];
  // Writes a scalar, or opens a container and pushes its frame.
  const open = (raw: unknown, key: string): void => {
    let v = raw;
    if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function')
      v = (v as { toJSON(key: string): unknown }).toJSON(key);
    if (Array.isArray(v)) {
      out.push('[');
      stack.push({ kind: 'array', items: v, next: 0 });
    } else if (v !== null && typeof v === 'object') {
      out.push('{');
      const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => !omitted(x));
      stack.push({ kind: 'object', entries: entries.sort(byKey), next: 0 });
    } else {
      out.push(omitted(v) ? 'null' : JSON.stringify(v));
    }
  };
  if (omitted(value)) return JSON.stringify(value);
  open(value, '');
  for (let frame = stack.at(-1); frame; frame = stack.at(-1)) {
    if (frame.kind === 'array') {
      if (frame.next === frame.items.length) {
        out.push(']');
        stack.pop();
        continue;
      }
      if (frame.next > 0) out.push(',');
      const i = frame.next++;
      open(frame.items[i], String(i));
    } else {
      if (frame.next === frame.entries.length) {
        out.push('}');
        stack.pop();
        continue;
      }
      const [k, v] = frame.entries[frame.next]!;
      out.push(`${frame.next++ > 0 ? ',' : ''}${JSON.stringify(k)}:`);
      open(v, k);
    }
  }
  return out.join('');
}

export const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');
