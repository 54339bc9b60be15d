import { decodeJwt, decodeProtectedHeader, importJWK, jwtVerify } from 'jose';
import type { DoctorCheck } from '../doctor-context.js';
import { fetchRaw } from '../fetch.js';
import { type DoctorLine, line } from '../line.js';
import { servedSigningKeys } from './documents.js';

/**
 * Every partition's status list token is served and verifies with a published key
 * (draft-ietf-oauth-status-list: `typ` statuslist+jwt, `sub` the list's URI).
 */
export const statusLists: DoctorCheck = {
  items: ['status lists', 'status list <partition>'],
  async run(ctx) {
    const store = await ctx.store();
    if (!store) return [];
    const partitions = await store.status.listPartitions();
    if (partitions.length === 0)
      return [line('status lists', 'PASS', 'no partition yet (the first issuance opens one)')];
    const published = (await servedSigningKeys(ctx)) ?? (await ctx.localSigning()) ?? [];
    const lines: DoctorLine[] = [];
    for (const { partition } of partitions) {
      const item = `status list ${partition}`;
      const url = `${ctx.origin}/statuslist/${partition}`;
      const res = await fetchRaw(url, ctx.timeoutMs);
      if ('problem' in res) {
        lines.push(line(item, 'FAIL', res.problem));
        continue;
      }
      try {
        const { kid } = decodeProtectedHeader(res.text);
        const jwk = published.find((k) => k.kid === kid);
        if (!jwk) throw new Error(`signed with ${String(kid)}, not a published key`);
        await jwtVerify(res.text, await importJWK(jwk, jwk.alg ?? 'ES256'), { typ: 'statuslist+jwt' });
        const expected = ctx.identity.urls.statusList(partition);
        const { sub } = decodeJwt(res.text);
        if (sub !== expected) throw new Error(`sub is ${String(sub)}, expected ${expected}`);
        lines.push(line(item, 'PASS', `${url} verifies with published key ${kid}`));
      } catch (err) {
        lines.push(line(item, 'FAIL', `${url}: ${(err as Error).message}`));
      }
    }
    return lines;
  },
};
