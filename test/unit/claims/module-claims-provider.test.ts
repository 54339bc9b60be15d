import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModuleClaimsProvider } from '../../../src/claims/module-claims-provider.js';
import { removeDir, tempDir } from '../../helpers/tmp.js';

const PROVIDER = 'export default { lookup: async () => ({ eligible: false }) };\n';

// A module provider's path stays inside SCHEMAS_DIR; a broken module names its schema file.
describe('module claims provider loading', () => {
  let root: string;
  let schemas: string;
  const schemaFile = () => join(schemas, 'member.json');

  beforeAll(() => {
    root = tempDir();
    schemas = join(root, 'schemas');
    mkdirSync(join(schemas, 'providers'), { recursive: true });
    writeFileSync(join(schemas, 'providers', 'ok.mjs'), PROVIDER);
    writeFileSync(join(schemas, 'providers', 'broken.mjs'), 'export default { lookup: async () => ( };\n');
    writeFileSync(join(root, 'outside.mjs'), PROVIDER);
    symlinkSync(join(root, 'outside.mjs'), join(schemas, 'providers', 'link.mjs'));
  });
  afterAll(() => removeDir(root));

  it('loads a module inside SCHEMAS_DIR, relative or absolute', async () => {
    for (const path of ['providers/ok.mjs', join(schemas, 'providers', 'ok.mjs')]) {
      const provider = await loadModuleClaimsProvider(path, schemas, schemaFile());
      expect(await provider.lookup({ userId: 'u', schemaId: 's', proofType: 'SD_JWT_VC' })).toEqual({
        eligible: false,
      });
    }
  });

  it.each([
    ['a ../ escape', '../outside.mjs'],
    ['a deep ../ escape', '../../../../etc/passwd'],
    ['an absolute path outside', '/etc/passwd'],
    ['a symlink pointing outside', 'providers/link.mjs'],
  ])('refuses %s, naming the schema file and SCHEMAS_DIR', async (_name, path) => {
    const err = (await loadModuleClaimsProvider(path, schemas, schemaFile()).catch(
      (e: unknown) => e,
    )) as Error;
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toContain(schemaFile());
    expect(err.message).toContain('SCHEMAS_DIR');
  });

  it('a module with a syntax error names the schema file and the module', async () => {
    const err = (await loadModuleClaimsProvider('providers/broken.mjs', schemas, schemaFile()).catch(
      (e: unknown) => e,
    )) as Error;
    expect(err.message).toContain(schemaFile());
    expect(err.message).toContain('broken.mjs');
  });
});
