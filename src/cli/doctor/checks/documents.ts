import type { JWK } from 'jose';
import type { DoctorCheck } from '../doctor-context.js';
import { keysLine } from '../fetch.js';
import { line } from '../line.js';

/** `/.well-known/did.json`: the did:web of ISSUER_ORIGIN, publishing the local signing keys. */
export const didJson: DoctorCheck = {
  items: ['did.json'],
  async run(ctx) {
    const did = await ctx.document('/.well-known/did.json');
    if (did.problem) return [line('did.json', 'FAIL', did.problem)];
    const doc = did.body as { id?: unknown; verificationMethod?: Array<{ publicKeyJwk?: JWK }> };
    const expected = ctx.identity.urls.did;
    if (doc.id !== expected)
      return [line('did.json', 'FAIL', `id is ${String(doc.id)}, expected ${expected}`)];
    const served = (doc.verificationMethod ?? []).map((m) => m.publicKeyJwk ?? {});
    return [keysLine('did.json', served, await ctx.localSigning())];
  },
};

/** The signing keys `/.well-known/jwt-vc-issuer` serves (what a verifier checks status lists with). */
export const servedSigningKeys = async (
  ctx: Parameters<DoctorCheck['run']>[0],
): Promise<JWK[] | undefined> => {
  const meta = await ctx.document('/.well-known/jwt-vc-issuer');
  return meta.problem ? undefined : ((meta.body as { jwks?: { keys?: JWK[] } }).jwks?.keys ?? []);
};

/** SD-JWT VC issuer metadata: `issuer` is ISSUER_ORIGIN and its JWKS the local signing keys. */
export const jwtVcIssuer: DoctorCheck = {
  items: ['jwt-vc-issuer'],
  async run(ctx) {
    const meta = await ctx.document('/.well-known/jwt-vc-issuer');
    if (meta.problem) return [line('jwt-vc-issuer', 'FAIL', meta.problem)];
    const { issuer } = meta.body as { issuer?: unknown };
    if (issuer !== ctx.identity.origin)
      return [line('jwt-vc-issuer', 'FAIL', `issuer is ${String(issuer)}, expected ${ctx.identity.origin}`)];
    return [keysLine('jwt-vc-issuer', (await servedSigningKeys(ctx)) ?? [], await ctx.localSigning())];
  },
};

/** `/.well-known/jwks.json`: the partner JWT keys the hosting service verifies with. */
export const jwksJson: DoctorCheck = {
  items: ['jwks.json'],
  async run(ctx) {
    const jwks = await ctx.document('/.well-known/jwks.json');
    if (jwks.problem) return [line('jwks.json', 'FAIL', jwks.problem)];
    const ring = await ctx.ring();
    return [
      keysLine(
        'jwks.json',
        (jwks.body as { keys?: JWK[] }).keys ?? [],
        ring instanceof Error ? undefined : ring.partnerKeys.map((k) => k.publicJwk),
      ),
    ];
  },
};
