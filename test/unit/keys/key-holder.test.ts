import { describe, expect, it } from 'vitest';
import { fileKeyHolder } from '../../../src/keys/key-holder.js';
import type { KeyRing } from '../../../src/keys/key-ring.js';
import { tempDir } from '../../helpers/tmp.js';

// WORKERS=N on SQLite: the workers share KEYS_DIR, and a rotation through one must reach the others.
describe('file key holder', () => {
  it('a rotation written by another holder on the same folder is picked up by the watching one', async () => {
    const dir = tempDir();
    const a = await fileKeyHolder(dir, true, undefined, 'development');
    let reloaded!: (ring: KeyRing) => void;
    const seen = new Promise<KeyRing>((resolve) => (reloaded = resolve));
    const b = await fileKeyHolder(dir, false, undefined, 'development', { pollMs: 20, onReload: reloaded });
    try {
      expect(b.current().signing.kid).toBe(a.current().signing.kid);
      const { created } = await a.rotate('credential-signing', new Date());
      const ring = await seen;
      expect(ring.signing.kid).toBe(created.kid);
      expect(b.current().signing.kid).toBe(created.kid);
      // The retired key stays in the ring (published until its last credential expires).
      expect(b.current().signingKeys.map((k) => k.kid)).toContain(
        a.current().signingKeys.find((k) => k.kid !== created.kid)?.kid,
      );
    } finally {
      a.close();
      b.close();
    }
  });

  it('without watch it keeps its ring until reload()', async () => {
    const dir = tempDir();
    const a = await fileKeyHolder(dir, true, undefined, 'development');
    const b = await fileKeyHolder(dir, false, undefined, 'development');
    const before = b.current().signing.kid;
    const { created } = await a.rotate('credential-signing', new Date());
    expect(b.current().signing.kid).toBe(before);
    expect((await b.reload()).signing.kid).toBe(created.kid);
  });
});
