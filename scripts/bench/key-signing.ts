import { generateKey } from '../../src/keys/key-ring.js';
import { openKeyBackend } from '../../src/keys/open-key-backend.js';
import type { Pkcs11Backend } from '../../src/keys/pkcs11-backend.js';
import { processToken } from '../../test/helpers/softhsm.js';
import { removeDir, tempDir } from '../../test/helpers/tmp.js';
import type { Row } from './issuance.js';

const SIGNATURES = 3000;
const IN_FLIGHT = 32;

/**
 * One ES256 signature over a credential-sized JWS input, by a software key and by a key in a
 * SoftHSM2 token (KEY_BACKEND=pkcs11: the session pool and C_SignAsync), 32 in flight, in this
 * process: the CPU each signature costs, apart from everything else an issuance does.
 */
export async function benchKeySigning(): Promise<Row[]> {
  const token = processToken('issuer-kit-bench');
  const backend = await openKeyBackend(
    { kind: 'pkcs11', module: token.module, token: { label: token.label } },
    token.pin,
  );
  const dirs = [tempDir(), tempDir()];
  try {
    const keys = {
      software: await generateKey(dirs[0]!, 'credential-signing', new Date()),
      pkcs11: await generateKey(dirs[1]!, 'credential-signing', new Date(), { backend }),
    };
    const data = Buffer.alloc(700, 'a');
    const rows: Row[] = [];
    for (const round of [1, 2])
      for (const [name, key] of Object.entries(keys)) {
        let left = SIGNATURES;
        const cpu = process.cpuUsage();
        const start = performance.now();
        await Promise.all(
          Array.from({ length: IN_FLIGHT }, async () => {
            while (left-- > 0) await key.sign(data);
          }),
        );
        const used = process.cpuUsage(cpu);
        const wall = performance.now() - start;
        rows.push(
          {
            name: `ES256 signature, ${name} key #${round}: CPU per signature`,
            value: (used.user + used.system) / 1000 / SIGNATURES,
            unit: 'ms',
          },
          {
            name: `ES256 signature, ${name} key #${round}: signatures/s`,
            value: SIGNATURES / (wall / 1000),
            unit: '/s',
          },
        );
      }
    // The pool opens a session only when all are busy: as many as were signing at once, so 32
    // here means no signature waited for another's session.
    rows.push({
      name: `ES256 signature, pkcs11: PKCS#11 sessions open after ${IN_FLIGHT} in flight`,
      value: (backend as Pkcs11Backend).sessionsOpen,
      unit: '',
    });
    return rows;
  } finally {
    await backend.close();
    for (const d of dirs) removeDir(d);
  }
}
