import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { once } from 'node:events';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { x5cToPem } from '../../src/keys/certificates.js';
import { DEV_CA_PEM, issueDevLeaf, loadOrCreateDevCa } from '../../src/keys/dev-ca.js';
import { postJson } from '../../src/outbound/http-json.js';
import { tempDir } from '../helpers/tmp.js';

// postJson's trust, with a second process started with NODE_EXTRA_CA_CERTS; the rest of postJson
// is tested in test/unit/outbound/http-json.test.ts.
// Answered at once: the deadline only has to outlast a busy machine.
const ANSWERED_MS = 60_000;

describe('postJson over https', () => {
  it('checks the certificate against the process trust (NODE_EXTRA_CA_CERTS), and speaks through a trusted one', async () => {
    const dir = tempDir();
    const server = createHttpsServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"tls":true}'));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const origin = `https://localhost:${(server.address() as AddressInfo).port}`;
    const ca = await loadOrCreateDevCa(dir);
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const chain = await issueDevLeaf(ca, privateKey, origin);
    server.setSecureContext({
      key: privateKey.export({ format: 'pem', type: 'pkcs8' }) as string,
      cert: x5cToPem(chain),
    });
    try {
      // This process does not trust the development CA.
      await expect(postJson(`${origin}/a`, {}, { timeoutMs: ANSWERED_MS })).rejects.toMatchObject({
        kind: 'network',
      });
      // A process started with NODE_EXTRA_CA_CERTS naming it does, as node's own https does.
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          '--input-type=module',
          '-e',
          `const { postJson } = await import(process.argv[1]);
           const res = await postJson(process.argv[2], {}, { timeoutMs: 60000 });
           process.stdout.write(JSON.stringify(res));`,
          fileURLToPath(new URL('../../src/outbound/http-json.ts', import.meta.url)),
          `${origin}/b`,
        ],
        {
          env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, DEV_CA_PEM) },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      let out = '';
      child.stdout.on('data', (c) => (out += c));
      const [code] = await once(child, 'exit');
      expect(code).toBe(0);
      expect(JSON.parse(out)).toEqual({ status: 200, body: { tls: true } });
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
