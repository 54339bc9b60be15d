import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrivateKey } from '@iden3/js-crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  BJJ_KEY_FILE,
  generateBjjKey,
  loadOrCreateBjjKey,
} from '../../../../src/formats/iden3-bjj/bjj-key.js';

describe('BabyJubJub key file (KEYS_DIR/iden3-bjj.json)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'iden3-key-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('creates the file with mode 0600 when allowed, then loads the same key', async () => {
    const created = await loadOrCreateBjjKey(dir, { generateIfMissing: true });
    const file = join(dir, BJJ_KEY_FILE);
    expect(created.file).toBe(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const json = JSON.parse(readFileSync(file, 'utf8'));
    expect(json.kty).toBe('BabyJubJub');
    // The public key is js-crypto's for the stored private key.
    expect(new PrivateKey(Buffer.from(json.privateKey, 'hex')).public().hex()).toBe(created.publicKeyHex);

    const loaded = await loadOrCreateBjjKey(dir, { generateIfMissing: false });
    expect(loaded.publicKeyHex).toBe(created.publicKeyHex);
  });

  it('names the file when it is missing and generation is off', async () => {
    await expect(loadOrCreateBjjKey(dir, { generateIfMissing: false })).rejects.toThrow(BJJ_KEY_FILE);
  });

  it('names the file and field of a bad file, never showing the key', async () => {
    const file = join(dir, BJJ_KEY_FILE);
    writeFileSync(file, '{ not json');
    await expect(loadOrCreateBjjKey(dir, { generateIfMissing: true })).rejects.toThrow(
      `${file}: not valid JSON`,
    );

    const secret = 'ab'.repeat(31);
    writeFileSync(
      file,
      JSON.stringify({ kty: 'BabyJubJub', privateKey: secret, publicKey: '00', createdAt: '' }),
    );
    const err = await loadOrCreateBjjKey(dir, { generateIfMissing: false }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain(`${file}: privateKey`);
    expect((err as Error).message).not.toContain(secret);

    const good = await generateBjjKey(join(dir, 'other'));
    const goodJson = JSON.parse(readFileSync(good.file, 'utf8'));
    writeFileSync(file, JSON.stringify({ ...goodJson, publicKey: 'cd'.repeat(32) }));
    await expect(loadOrCreateBjjKey(dir, { generateIfMissing: false })).rejects.toThrow(
      `${file}: publicKey does not match privateKey`,
    );
  });

  it('generateBjjKey never overwrites an existing key', async () => {
    const first = await generateBjjKey(dir);
    await expect(generateBjjKey(dir)).rejects.toThrow('already exists');
    expect((await loadOrCreateBjjKey(dir, { generateIfMissing: false })).publicKeyHex).toBe(
      first.publicKeyHex,
    );
  });
});
