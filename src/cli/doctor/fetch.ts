import type { JWK } from 'jose';
import { networkCause } from '../admin-client.js';
import { type DoctorLine, line } from './line.js';

export type Fetched = { body: unknown; problem?: undefined } | { body?: undefined; problem: string };

export async function fetchDocument(url: string, timeoutMs: number): Promise<Fetched> {
  const res = await fetchRaw(url, timeoutMs);
  if ('problem' in res) return { problem: res.problem };
  try {
    return { body: JSON.parse(res.text) };
  } catch {
    return { problem: `${url} answered ${res.status} without JSON` };
  }
}

export async function fetchRaw(
  url: string,
  timeoutMs: number,
): Promise<{ status: number; text: string; type: string } | { problem: string }> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
  } catch (err) {
    return {
      problem: `${url}: ${(err as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : networkCause(err)}`,
    };
  }
  const text = await res.text();
  if (res.status !== 200) return { problem: `${url} answered ${res.status}` };
  return { status: res.status, text, type: res.headers.get('content-type') ?? '' };
}

/** The public members that identify a key. */
const keyId = (jwk: JWK) => JSON.stringify([jwk.kid, jwk.kty, jwk.crv, jwk.x, jwk.y, jwk.n, jwk.e]);

/** The served keys against the local ones: a PASS when they are the same set and none is private. */
export function keysLine(item: string, served: JWK[], local: JWK[] | undefined): DoctorLine {
  if (!local)
    return line(item, 'FAIL', 'served, but the local keys could not be read to compare (see keys/database)');
  const servedIds = new Set(served.map(keyId));
  const localIds = new Set(local.map(keyId));
  const missing = local.filter((k) => !servedIds.has(keyId(k))).map((k) => k.kid);
  const extra = served.filter((k) => !localIds.has(keyId(k))).map((k) => k.kid ?? '(no kid)');
  if (served.some((k) => 'd' in k)) return line(item, 'FAIL', 'serves a private key member (d)');
  if (missing.length === 0 && extra.length === 0)
    return line(
      item,
      'PASS',
      `serves the ${local.length} local key(s): ${local.map((k) => k.kid).join(', ')}`,
    );
  return line(
    item,
    'FAIL',
    `keys differ from KEYS_DIR: ${missing.length ? `not served ${missing.join(', ')}` : ''}${missing.length && extra.length ? '; ' : ''}${extra.length ? `not local ${extra.join(', ')}` : ''}`,
  );
}
