import { createPublicKey, verify as cryptoVerify, type JsonWebKey } from 'node:crypto';
import type { JWK } from 'jose';
import type { ManagedKey } from '../../../keys/key-ring.js';
import type { Pkcs11Backend } from '../../../keys/pkcs11-backend.js';
import { softwareCopies } from '../../../keys/token-migration.js';
import type { DoctorCheck } from '../doctor-context.js';
import { type DoctorLine, line } from '../line.js';

const item = 'key backend';
const copies = 'software key copies';

/**
 * docs/security.md "Keys in a hardware security module". With KEY_BACKEND=pkcs11: the module
 * loads, the token is found and the PIN logs in (the PIN itself is never shown); every active and
 * retired-but-live key is in the token, sensitive and not extractable; and a test signature by
 * the active signing key verifies with the key `/.well-known/jwt-vc-issuer` publishes. While a
 * software copy remains (set aside by `keys migrate-to-token import`, or a retired software key),
 * a WARN names it. Silent with the default software backend.
 */
export const keyBackend: DoctorCheck = {
  items: [item, copies],
  async run(ctx) {
    if (ctx.config.keyBackend.kind === 'software') return [];
    const backend = await ctx.keyBackend();
    if (backend instanceof Error) return [line(item, 'FAIL', `pkcs11: ${backend.message}`)];
    const ring = await ctx.ring();
    if (ring instanceof Error) return [line(item, 'FAIL', `pkcs11: the keys do not load (see keys)`)];
    const token = backend as Pkcs11Backend;
    const live = new Set((await ctx.localSigning())?.map((k) => k.kid) ?? [ring.signing.kid]);
    const checked: ManagedKey[] = [
      ...ring.signingKeys.filter((k) => !k.retiredAt || live.has(k.kid)),
      ...ring.partnerKeys,
    ].filter((k) => k.custody === 'pkcs11');
    const out: DoctorLine[] = [];
    const problems: string[] = [];
    for (const key of checked) {
      const id = Buffer.from(key.kid, 'base64url').toString('hex');
      const found = await token.inspect(id).catch((err: Error) => err);
      if (found instanceof Error) problems.push(`${key.purpose} ${key.kid}: ${found.message}`);
      else if (!found) problems.push(`${key.purpose} ${key.kid}: not in ${token.where}`);
      else if (found.extractable || !found.sensitive || !found.valueRefused)
        problems.push(
          `${key.purpose} ${key.kid}: its private key can leave the token (CKA_EXTRACTABLE ${found.extractable}, CKA_SENSITIVE ${found.sensitive})`,
        );
    }
    if (problems.length > 0) out.push(line(item, 'FAIL', `pkcs11 ${token.where}: ${problems.join('; ')}`));
    else out.push(await testSignature(ctx, ring.signing, token.where, checked.length));
    const remaining = softwareCopies(ctx.config.keysDir, ring);
    if (remaining.length > 0)
      out.push(
        line(
          copies,
          'WARN',
          `${remaining.length} software copy(ies) of signing keys remain: ${remaining.join(', ')}; destroy them once the token's keys are backed up as your HSM provides`,
        ),
      );
    return out;
  },
};

async function testSignature(
  ctx: Parameters<DoctorCheck['run']>[0],
  key: ManagedKey,
  where: string,
  count: number,
): Promise<DoctorLine> {
  const data = Buffer.from(`issuer-kit doctor ${ctx.now.toISOString()}`);
  let signature: Buffer;
  try {
    signature = await key.sign(data);
  } catch (err) {
    return line(item, 'FAIL', `pkcs11 ${where}: the test signature failed (${(err as Error).message})`);
  }
  const doc = await ctx.document('/.well-known/jwt-vc-issuer');
  const keys = (doc.body as { jwks?: { keys?: JWK[] } } | undefined)?.jwks?.keys;
  const publishedKey = keys?.find((k) => k.kid === key.kid);
  const against = publishedKey ?? key.publicJwk;
  const ok = cryptoVerify(
    'sha256',
    data,
    { key: createPublicKey({ key: against as JsonWebKey, format: 'jwk' }), dsaEncoding: 'ieee-p1363' },
    signature,
  );
  if (!ok)
    return line(item, 'FAIL', `pkcs11 ${where}: the token's test signature by ${key.kid} does not verify`);
  return line(
    item,
    publishedKey ? 'PASS' : 'WARN',
    `pkcs11 ${where}: logged in; ${count} live key(s) in the token, none extractable; a test signature by ${key.kid} verifies with ${publishedKey ? 'the published key' : 'the local key (the published one could not be fetched)'}`,
  );
}
