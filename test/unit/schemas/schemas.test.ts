import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSchemas, SchemaFileError } from '../../../src/formats/schema-file.js';
import { IssuerUrls } from '../../../src/identity/issuer-identity.js';
import { tempDir } from '../../helpers/tmp.js';

const ORIGIN = 'https://issuer.example';

const base = {
  schemaId: 'test-v1',
  title: 'Test',
  proofTypes: ['SD_JWT_VC'],
  expiresInSeconds: 3600,
  credentialSubject: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      born: { type: 'string', format: 'date' },
      at: { type: 'string', format: 'date-time' },
      mail: { type: 'string', format: 'email' },
      site: { type: 'string', format: 'uri' },
    },
    required: ['name'],
  },
  claims: { provider: 'sqlite' },
  sdJwt: { vct: 'https://x.example/vct/test' },
};

function dirWith(files: Record<string, unknown>): string {
  const dir = tempDir();
  for (const [name, body] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), typeof body === 'string' ? body : JSON.stringify(body));
  }
  return dir;
}

// docs/schemas-and-claims.md: schema files are a contract, checked at start-up with the file and field named.
describe('schemas', () => {
  it('loads the shipped example schema', () => {
    const registry = loadSchemas(join(process.cwd(), 'schemas'), new IssuerUrls(ORIGIN));
    expect(registry.get('membership-v1')?.proofTypes).toContain('SD_JWT_VC');
  });

  it('reads only *.json directly in the folder', () => {
    const registry = loadSchemas(
      dirWith({ 'a.json': base, 'contexts/x.json': { not: 'a schema' }, 'notes.txt': 'hi' }),
      new IssuerUrls(ORIGIN),
    );
    expect(registry.all().map((s) => s.schemaId)).toEqual(['test-v1']);
  });

  it.each([
    ['bad JSON', '{', /bad\.json: not valid JSON/],
    ['missing schemaId', { ...base, schemaId: undefined }, /bad\.json: schemaId/],
    ['unknown proof type', { ...base, proofTypes: ['X'] }, /bad\.json: proofTypes/],
    ['http provider without url', { ...base, claims: { provider: 'http' } }, /bad\.json: claims/],
    [
      'a reserved claim in the disclosure frame',
      { ...base, sdJwt: { vct: 'x', disclosureFrame: { _sd: ['name', 'iss'] } } },
      /sdJwt\.disclosureFrame: reserved claim names iss/,
    ],
    ['BJJ without iden3 block', { ...base, proofTypes: ['BJJ_SIG_2021'] }, /bad\.json: iden3/],
    [
      'reserved claim',
      { ...base, credentialSubject: { type: 'object', properties: { iss: {} } } },
      /reserved claim names iss/,
    ],
    [
      'invalid JSON Schema',
      { ...base, credentialSubject: { type: 'object', properties: { a: { type: 'nope' } } } },
      /credentialSubject: not a valid JSON Schema/,
    ],
    // docs/schemas-and-claims.md "Renewal"
    [
      'a renewal window without a positive whole number',
      { ...base, renewal: { beforeExpirySeconds: 0 } },
      /bad\.json: renewal\.beforeExpirySeconds/,
    ],
    [
      'a renewal window as long as the credential lives',
      { ...base, renewal: { beforeExpirySeconds: 3600 } },
      /bad\.json: renewal\.beforeExpirySeconds: must be less than expiresInSeconds/,
    ],
    [
      'an unknown field in renewal',
      { ...base, renewal: { beforeExpirySeconds: 60, revokePrevous: true } },
      /bad\.json: renewal.*revokePrevous/,
    ],
    [
      'renewal of a schema not issued as SD_JWT_VC',
      {
        ...base,
        proofTypes: ['BJJ_SIG_2021'],
        iden3: {
          type: 'T',
          contextUrl: 'https://x.example/c',
          contextFile: 'c.jsonld',
          jsonSchemaUrl: 'https://x.example/s',
        },
        renewal: { beforeExpirySeconds: 60 },
      },
      /bad\.json: renewal: needs SD_JWT_VC/,
    ],
    [
      'an empty list of accepted key storage levels',
      { ...base, keyAttestation: { keyStorage: [] } },
      /bad\.json: keyAttestation\.keyStorage/,
    ],
    [
      'an unknown field in keyAttestation',
      { ...base, keyAttestation: { key_storage: ['iso_18045_high'] } },
      /bad\.json: keyAttestation.*key_storage/,
    ],
    [
      'keyAttestation on a schema not issued as SD_JWT_VC',
      {
        ...base,
        proofTypes: ['BJJ_SIG_2021'],
        iden3: {
          type: 'T',
          contextUrl: 'https://x.example/c',
          contextFile: 'c.jsonld',
          jsonSchemaUrl: 'https://x.example/s',
        },
        keyAttestation: {},
      },
      /bad\.json: keyAttestation: needs SD_JWT_VC/,
    ],
  ])('rejects %s', (_name, body, message) => {
    expect(() => loadSchemas(dirWith({ 'bad.json': body }), new IssuerUrls(ORIGIN))).toThrow(message);
  });

  it.each([
    ['without an sdJwt block', undefined],
    ['with an sdJwt block that names no vct', { disclosureFrame: { _sd: ['name'] } }],
  ])('accepts an SD-JWT schema %s: vct defaults to ISSUER_ORIGIN/vct/<schemaId>', (_name, sdJwt) => {
    const registry = loadSchemas(dirWith({ 'a.json': { ...base, sdJwt } }), new IssuerUrls(`${ORIGIN}/`));
    expect(registry.require('test-v1').sdJwt?.vct).toBe(`${ORIGIN}/vct/test-v1`);
  });

  it('reads renewal, revokePrevious defaulting to false', () => {
    const registry = loadSchemas(
      dirWith({ 'a.json': { ...base, renewal: { beforeExpirySeconds: 600 } } }),
      new IssuerUrls(ORIGIN),
    );
    expect(registry.require('test-v1').renewal).toEqual({ beforeExpirySeconds: 600, revokePrevious: false });
    expect(
      loadSchemas(dirWith({ 'a.json': base }), new IssuerUrls(ORIGIN)).require('test-v1').renewal,
    ).toBeUndefined();
  });

  it('keeps the vct a schema file names', () => {
    const registry = loadSchemas(
      dirWith({ 'a.json': { ...base, sdJwt: { vct: 'urn:vct:x' } } }),
      new IssuerUrls(ORIGIN),
    );
    expect(registry.require('test-v1').sdJwt?.vct).toBe('urn:vct:x');
  });

  it('validates claims without the subject id a schema may list (the holder DID is not a claim)', () => {
    const withId = {
      ...base,
      credentialSubject: {
        type: 'object',
        properties: { id: { type: 'string' }, name: { type: 'string' } },
        required: ['id', 'name'],
      },
    };
    const registry = loadSchemas(dirWith({ 'a.json': withId }), new IssuerUrls(ORIGIN));
    expect(registry.require('test-v1').validateClaims({ name: 'A' })).toEqual([]);
  });

  it('defaults title, expiry and claims source when a file leaves them out', () => {
    const { title: _t, expiresInSeconds: _e, claims: _c, ...minimal } = base;
    const schema = loadSchemas(dirWith({ 'a.json': minimal }), new IssuerUrls(ORIGIN)).require('test-v1');
    expect(schema).toMatchObject({
      title: 'test-v1',
      expiresInSeconds: 31536000,
      claims: { provider: 'sqlite' },
    });
  });

  it('rejects a duplicate schemaId naming both files', () => {
    expect(() => loadSchemas(dirWith({ 'a.json': base, 'b.json': base }), new IssuerUrls(ORIGIN))).toThrow(
      SchemaFileError,
    );
  });

  it('validates claims as JSON Schema 2020-12 with formats, naming the claim', () => {
    const registry = loadSchemas(dirWith({ 'a.json': base }), new IssuerUrls(ORIGIN));
    const schema = registry.require('test-v1');
    expect(
      schema.validateClaims({
        name: 'A',
        born: '2000-01-31',
        at: '2020-01-01T00:00:00Z',
        mail: 'a@b.example',
        site: 'https://x.example',
      }),
    ).toEqual([]);
    const claims = (c: Record<string, unknown>) => schema.validateClaims(c).map((p) => p.claim);
    expect(claims({})).toEqual(['name']);
    expect(claims({ name: 'A', born: '2000-13-01' })).toEqual(['born']);
    expect(claims({ name: 'A', at: 'yesterday' })).toEqual(['at']);
    expect(claims({ name: 'A', mail: 'nope' })).toEqual(['mail']);
    expect(claims({ name: 'A', site: 'not a uri' })).toEqual(['site']);
    expect(() => registry.assertClaims(schema, { name: 'A', iss: 'x' })).toThrow(
      expect.objectContaining({ status: 422, code: 'CLAIMS_INVALID' }),
    );
  });

  it('each load validates by its own file: the same schema in two folders alike, a changed one by its new rules', () => {
    const load = (subject: unknown) =>
      loadSchemas(
        dirWith({ 'a.json': { ...base, credentialSubject: subject } }),
        new IssuerUrls(ORIGIN),
      ).require('test-v1');
    const first = load(base.credentialSubject);
    const second = load(base.credentialSubject);
    for (const schema of [first, second]) {
      expect(schema.validateClaims({ name: 'A' })).toEqual([]);
      expect(schema.validateClaims({ name: 'A', born: 'x' }).map((p) => p.claim)).toEqual(['born']);
    }
    const changed = load({ ...base.credentialSubject, required: ['name', 'mail'] });
    expect(changed.validateClaims({ name: 'A' }).map((p) => p.claim)).toEqual(['mail']);
    expect(first.validateClaims({ name: 'A' })).toEqual([]);
  });

  it('unknown schemaId → 404', () => {
    const registry = loadSchemas(dirWith({ 'a.json': base }), new IssuerUrls(ORIGIN));
    expect(() => registry.require('nope')).toThrow(expect.objectContaining({ status: 404 }));
  });
});
