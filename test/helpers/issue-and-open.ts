import { expect } from 'vitest';
import { openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import type { TestIssuer } from './issuer.js';

let n = 0;

/**
 * Issues a membership credential through `POST /admin/issue-vc` (direct issuance) to a new holder of
 * the emulator, then opens the envelope the emulator stored with that holder's private key, as the
 * holder's wallet would. Answers the compact SD-JWT VC.
 */
export async function issueDirectlyAndOpen(
  issuer: TestIssuer,
  options: { emailPrefix?: string; validForMs?: number } = {},
): Promise<string> {
  const email = `${options.emailPrefix ?? 'holder'}.${n++}@example.org`;
  const res = await issuer.admin('/admin/issue-vc', {
    userId: email,
    schemaId: 'membership-v1',
    vct: 'urn:vct:membership',
    expiration: new Date(Date.now() + (options.validForMs ?? 86_400_000)).toISOString(),
    credentialSubject: {
      givenName: 'Eve',
      familyName: 'Li',
      memberSince: '2022-01-01',
      tier: 'basic',
      memberNumber: 9,
    },
  });
  expect(res.status).toBe(201);
  const { credentialId } = (await res.json()) as { credentialId: string };
  const holder = issuer.emulator!.state.holderByEmail(email)!;
  const envelope = issuer.emulator!.state.envelopes.get(credentialId)!.envelope;
  return openEnvelope(privateKeyFromPkcs8Hex(holder.privateKeyPkcs8Hex), envelope) as string;
}
