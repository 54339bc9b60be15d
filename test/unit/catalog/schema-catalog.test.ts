import { describe, expect, it } from 'vitest';
import { SchemaCatalog, type SchemaSet } from '../../../src/catalog/schema-catalog.js';
import { type LoadedSchema, SchemaFileError, SchemaRegistry } from '../../../src/schemas/schema-registry.js';

const set = (...ids: string[]): SchemaSet => ({
  registry: new SchemaRegistry(new Map(ids.map((id) => [id, { schemaId: id } as LoadedSchema]))),
  typeMetadata: new Map(),
  claimsProviders: new Map(),
});

/** A build the test finishes by hand: the next value to build, or a failure. */
function builds() {
  const queue: Array<() => SchemaSet> = [];
  return {
    next: (fn: () => SchemaSet) => queue.push(fn),
    build: async () => queue.shift()!(),
  };
}

const ids = (catalog: SchemaCatalog) => catalog.schemas.all().map((s) => s.schemaId);

describe('SchemaCatalog', () => {
  it('a pinned request keeps the set it started with; later ones see the reloaded set', async () => {
    const b = builds();
    const catalog = new SchemaCatalog(set('a'), b.build);
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const inFlight = catalog.pin(async () => {
      const before = ids(catalog);
      await released;
      return { before, after: ids(catalog), has: catalog.schemas.get('b') !== undefined };
    });
    b.next(() => set('a', 'b'));
    expect((await catalog.reload()).ok).toBe(true);
    expect(ids(catalog)).toEqual(['a', 'b']);
    release();
    expect(await inFlight).toEqual({ before: ['a'], after: ['a'], has: false });
    expect(catalog.pin(() => ids(catalog))).toEqual(['a', 'b']);
  });

  it('a failed build keeps the old set and names every problem', async () => {
    const b = builds();
    const catalog = new SchemaCatalog(set('a'), b.build);
    b.next(() => {
      throw new SchemaFileError([{ file: '/s/bad.json', message: 'proofTypes: invalid' }]);
    });
    const outcome = await catalog.reload();
    expect(outcome).toMatchObject({ ok: false, problems: [{ file: '/s/bad.json' }] });
    expect(outcome.schemas.map((s) => s.schemaId)).toEqual(['a']);
    expect(ids(catalog)).toEqual(['a']);
  });

  it('reloads one at a time, in order', async () => {
    const b = builds();
    const catalog = new SchemaCatalog(set('a'), b.build);
    b.next(() => set('b'));
    b.next(() => set('c'));
    const [first, second] = await Promise.all([catalog.reload(), catalog.reload()]);
    expect(first.schemas.map((s) => s.schemaId)).toEqual(['b']);
    expect(second.schemas.map((s) => s.schemaId)).toEqual(['c']);
    expect(ids(catalog)).toEqual(['c']);
  });
});
