import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { generateHolderKeyPair, openEnvelope } from '../../src/envelope/index.js';
import { expectError } from '../helpers/errors.js';
import { removeDir, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { holderIden3Did } from '../unit/formats/iden3-bjj/fixtures.js';

const CLUB_CONTEXT = {
  '@context': [
    {
      '@protected': true,
      '@version': 1.1,
      id: '@id',
      type: '@type',
      Club: {
        '@id': 'https://issuer.example/contexts/club-v1.jsonld#Club',
        '@context': {
          '@propagate': true,
          '@protected': true,
          'club-vocab': 'https://issuer.example/vocab/club-v1.md#',
          xsd: 'http://www.w3.org/2001/XMLSchema#',
          name: { '@id': 'club-vocab:name', '@type': 'xsd:string' },
        },
      },
    },
  ],
};

const clubSchema = {
  schemaId: 'club-v1',
  proofTypes: ['SD_JWT_VC', 'BJJ_SIG_2021'],
  credentialSubject: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  iden3: {
    type: 'Club',
    contextUrl: 'https://issuer.example/contexts/club-v1.jsonld',
    contextFile: 'contexts/club-v1.jsonld',
    jsonSchemaUrl: 'https://issuer.example/schemas/club-v1.json',
  },
};

// docs/schemas-and-claims.md "Reloading schemas": an Iden3 schema added by a reload is prepared
// (its JSON-LD context loaded) and issues; a context changed under the same URL is refused.
describe('schema reload with the Iden3 back-end', () => {
  const cleanup: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('a new BJJ_SIG_2021 schema issues after a reload; a changed context file is refused', async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const schemasDir = join(dir, 'schemas');
    cpSync('schemas', schemasDir, { recursive: true });
    const issuer: TestIssuer = await startIssuer({ dir, env: { SCHEMAS_DIR: schemasDir } });
    cleanup.push(() => issuer.close());

    // The context file is missing: the reload names it and keeps the set.
    writeFileSync(join(schemasDir, 'club-v1.json'), JSON.stringify(clubSchema));
    const missing = await issuer.admin('/admin/schemas/reload', {});
    const body = await expectError(missing, 422, 'SCHEMAS_INVALID');
    expect((body.details as { problems: Array<{ file: string }> }).problems.map((p) => p.file)).toEqual([
      join(schemasDir, 'club-v1.json'),
    ]);

    writeFileSync(join(schemasDir, 'contexts', 'club-v1.jsonld'), JSON.stringify(CLUB_CONTEXT));
    expect((await issuer.admin('/admin/schemas/reload', {})).status).toBe(200);
    const imported = await issuer.admin('/admin/claims', {
      records: [{ userId: 'club-user', schemaId: 'club-v1', claims: { name: 'Ada' } }],
    });
    expect(imported.status).toBe(200);
    const holder = generateHolderKeyPair();
    const holderDid = holderIden3Did(21n);
    const res = await issuer.post('/issue-vc', {
      holderDID: holderDid,
      pubKey: holder.publicKeyHex,
      userId: 'club-user',
      schemaId: 'club-v1',
      proofType: 'BJJ_SIG_2021',
    });
    expect(res.status).toBe(201);
    const stored = [...issuer.emulator!.state.envelopes.values()].find(
      (e) => e.envelope.holderDid === holderDid,
    )!;
    const vc = openEnvelope(holder.privateKey, stored.envelope) as Record<string, unknown>;
    expect(vc.type).toEqual(['VerifiableCredential', 'Club']);
    expect(vc.credentialSubject).toMatchObject({ id: holderDid, name: 'Ada' });

    // The membership context edited in place: refused (the running loader keeps the old one).
    const file = join(schemasDir, 'contexts', 'membership-v1.jsonld');
    const context = JSON.parse(readFileSync(file, 'utf8')) as { '@context': Array<Record<string, unknown>> };
    context['@context'][0]!.extra = 'https://issuer.example/vocab/extra';
    writeFileSync(file, JSON.stringify(context));
    const changed = await issuer.admin('/admin/schemas/reload', {});
    const refused = await expectError(changed, 422, 'SCHEMAS_INVALID');
    expect((refused.details as { problems: Array<{ file: string }> }).problems.map((p) => p.file)).toEqual([
      join(schemasDir, 'membership-v1.json'),
    ]);
  });
});
