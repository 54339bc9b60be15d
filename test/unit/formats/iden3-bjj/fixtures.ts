import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDIDType, DID } from '@iden3/js-iden3-core';
import { loadSchemaFile } from '../../../../src/formats/schema-file.js';
import { IssuerUrls } from '../../../../src/identity/issuer-identity.js';
import type { CredentialSchema } from '../../../../src/schemas/schema-file.js';

export const SCHEMAS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../schemas');

/** The example schema as the loader would give it (docs/schemas-and-claims.md). */
export function membershipSchema(): CredentialSchema {
  const file = join(SCHEMAS_DIR, 'membership-v1.json');
  return loadSchemaFile(file, new IssuerUrls('https://issuer.example'));
}

export const MEMBERSHIP_TYPE_IRI = 'https://issuer.example/contexts/membership-v1.jsonld#Membership';

export const MEMBERSHIP_CLAIMS = {
  givenName: 'Ada',
  familyName: 'Lovelace',
  email: 'ada@example.org',
  memberSince: '2019-03-01',
  tier: 'gold',
  memberNumber: 1815,
};

/**
 * A holder DID of the same network (any Iden3 genesis identifier will do), one per seed. The genesis
 * id keeps the top 27 bytes of the state, so the seed is shifted past the 5 bytes it drops.
 */
export function holderIden3Did(seed = 7n): string {
  return DID.newFromIdenState(buildDIDType('iden3', 'privado', 'test'), seed << 40n).string();
}

export const HOLDER_DID_KEY = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK';
