import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DateOnly } from '@animo-id/mdoc';
import { describe, expect, it } from 'vitest';
import { mdocElements } from '../../../../src/formats/mso-mdoc/elements.js';
import { loadSchemaFile, SchemaFileError } from '../../../../src/formats/schema-file.js';
import { tempDir } from '../../../helpers/tmp.js';

const urls = { vct: (id: string) => `https://issuer.example/vct/${id}` };
const EXAMPLE = 'examples/schemas/membership-mdoc-v1.json';

describe('the mdoc schema block', () => {
  it('the example schema file loads, and its claims become ISO 18013-5 elements', () => {
    const schema = loadSchemaFile(EXAMPLE, urls);
    const { docType, namespace, values } = mdocElements(schema, {
      givenName: 'Ada',
      memberSince: '2020-01-31',
      memberNumber: 7,
      tier: 'gold',
      photo: Buffer.from([1, 2, 3]).toString('base64'),
    });
    expect({ docType, namespace }).toEqual({
      docType: 'org.example.membership.1',
      namespace: 'org.example.membership.1',
    });
    // Renamed by `elements`; others keep their claim name.
    expect(Object.keys(values)).toEqual(['given_name', 'member_since', 'member_number', 'tier', 'photo']);
    expect(values.member_since).toBeInstanceOf(DateOnly);
    expect(String(values.member_since)).toBe('2020-01-31');
    expect(values.photo).toEqual(new Uint8Array([1, 2, 3]));
  });

  it('the namespace defaults to the docType', () => {
    const dir = tempDir();
    const raw = JSON.parse(readFileSync(EXAMPLE, 'utf8'));
    raw.mdoc = { docType: 'org.example.other.1' };
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'other.json'), JSON.stringify(raw));
    const schema = loadSchemaFile(join(dir, 'other.json'), urls);
    expect(mdocElements(schema, { givenName: 'Ada' })).toMatchObject({
      namespace: 'org.example.other.1',
      values: { givenName: 'Ada' },
    });
  });

  it('a schema listing MSO_MDOC without a valid block is refused, naming the field', () => {
    const dir = tempDir();
    const raw = JSON.parse(readFileSync(EXAMPLE, 'utf8'));
    mkdirSync(dir, { recursive: true });
    const write = (name: string, value: unknown) => {
      writeFileSync(join(dir, name), JSON.stringify(value));
      return join(dir, name);
    };
    const problems = (file: string) => {
      try {
        loadSchemaFile(file, urls);
        return [];
      } catch (err) {
        expect(err).toBeInstanceOf(SchemaFileError);
        return (err as SchemaFileError).message;
      }
    };
    const { mdoc: _mdoc, ...withoutBlock } = raw;
    expect(problems(write('a.json', withoutBlock))).toMatch(/mdoc: required when proofTypes lists MSO_MDOC/);
    expect(problems(write('b.json', { ...raw, mdoc: { docType: 'no dots' } }))).toMatch(
      /mdoc\.docType: must be a reverse-domain name/,
    );
    expect(problems(write('c.json', { ...raw, mdoc: { docType: 'a.b', extra: 1 } }))).toMatch(/mdoc/);
  });
});

describe('a reloaded schema set', () => {
  it('cannot turn mdoc on: a schema listing MSO_MDOC waits for a restart, named by its file', async () => {
    const { msoMdoc } = await import('../../../../src/formats/mso-mdoc/format.js');
    const schema = loadSchemaFile(EXAMPLE, urls);
    expect(msoMdoc.schemaProblems!([schema], 'schemas', undefined)).toEqual([
      {
        file: schema.file,
        message:
          'proofTypes: MSO_MDOC starts only when a schema lists it at start-up; restart the server to add it',
      },
    ]);
    const running = { issuer: {} as never, close: async () => undefined };
    expect(msoMdoc.schemaProblems!([schema], 'schemas', running)).toEqual([]);
  });
});
