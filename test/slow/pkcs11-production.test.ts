import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLocalJWKSet, decodeProtectedHeader, type JWK, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmulatorServer, startEmulatorServer } from '../../src/development/emulator/index.js';
import { openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { entryArgs } from '../helpers/entry.js';
import {
  type InstanceProcess,
  startInstanceProcess,
  stopInstanceProcesses,
} from '../helpers/instance-process.js';
import { issuerJwks } from '../helpers/jwks.js';
import { createTempDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';
import { newSoftHsmToken, softHsmAvailable } from '../helpers/softhsm.js';
import { removeDir, tempDir } from '../helpers/tmp.js';

const available = softHsmAvailable('the PKCS#11 production start test');
const onPostgres = available && (await postgresAvailable('the PKCS#11 production start on PostgreSQL'));

// Random-looking: production refuses low-entropy secrets.
const API_KEY = 'q8Zr1VfN4yT0c+Lk7wXb2HdM9sJe5uPg3RnA6oYiQ1E=';
const ADMIN_API_KEY = 'Jd3Wm9Rk0tYv6BzXq2Lf8NsH1cGp5eUa7iOw4KrT0nM=';
const PARTNER_ID = '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11';

async function runScript(script: string, args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, entryArgs(script, ...args), {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

// docs/security.md "Keys in a hardware security module" and docs/going-live.md: a production
// start with KEY_BACKEND=pkcs11 (SoftHSM2), keys made by `NODE_ENV=production npm run
// keys:generate` in the token; the production guard reads them without their private half, doctor
// passes the key backend and the development state, and a direct issuance is signed by the token.
describe.each([
  { engine: 'sqlite', skip: !available },
  { engine: 'postgres', skip: !onPostgres },
])('NODE_ENV=production KEY_BACKEND=pkcs11 on $engine', ({ engine, skip }) => {
  const dir = tempDir();
  const keysDir = join(dir, 'keys');
  let db: TempDatabase | undefined;
  let emulator: EmulatorServer | undefined;
  let instance: InstanceProcess | undefined;
  let env: Record<string, string>;

  beforeAll(async () => {
    if (skip) return;
    const token = newSoftHsmToken(`issuer-kit-prod-${engine}`);
    if (engine === 'postgres') db = await createTempDatabase();
    emulator = await startEmulatorServer({ partnerId: PARTNER_ID, jwks: issuerJwks(() => instance?.url) });
    env = {
      ...token.env,
      NODE_ENV: 'production',
      KEYS_DIR: keysDir,
      DATABASE_URL: db ? db.url : `sqlite:${join(dir, 'issuer.db')}`,
      KEY_ENCRYPTION_KEY: '5f0c7a1e93b24d68a1c3e7f90b2d4a6c8e1f3a5b7c9d0e2f4a6b8c0d1e3f5a7b',
      ISSUER_ORIGIN: 'https://issuer.example.com',
      API_KEY,
      ADMIN_API_KEY,
      PARTNER_ID,
      SERVICE_V1_BASE_URL: emulator.url,
      // The emulator listens on http: ALLOW_INSECURE_UPSTREAM lets production use it.
      ALLOW_INSECURE_UPSTREAM: '1',
    };
    const generated = await runScript('scripts/keys-generate.ts', [], env);
    expect(generated.stderr).toBe('');
    expect(generated.code).toBe(0);
  });
  afterAll(async () => {
    if (instance) await stopInstanceProcesses([instance]);
    await emulator?.close();
    await db?.drop();
    removeDir(dir);
  });

  it.skipIf(skip)('starts, passes doctor and issues with the token-held keys', async () => {
    // The key files hold the token's reference, never a private key.
    const keyFiles = readdirSync(keysDir).filter((f) => /^(credential-signing|partner-jwt)-/.test(f));
    expect(keyFiles).toHaveLength(2);
    const tokenKids: string[] = [];
    for (const name of keyFiles) {
      const key = JSON.parse(readFileSync(join(keysDir, name), 'utf8'));
      expect(key.environment).toBe('production');
      expect(key.token.backend).toBe('pkcs11');
      expect(key.privateJwk).toBeUndefined();
      // `<purpose>-<kid>.json` (docs/security.md).
      tokenKids.push(name.replace(/^(credential-signing|partner-jwt)-|\.json$/g, ''));
    }

    instance = await startInstanceProcess({
      databaseUrl: env.DATABASE_URL!,
      serviceUrl: emulator!.url,
      dir,
      env,
    });

    // The public documents from this listener: the test signature verifies with the published key.
    const doctor = await runScript(
      'scripts/admin.ts',
      ['--json', 'doctor', '--origin', instance.url, '--allow-http'],
      env,
    );
    const items = (
      JSON.parse(doctor.stdout) as { items: { item: string; verdict: string; detail: string }[] }
    ).items;
    const verdicts = (item: string) => items.filter((i) => i.item === item).map((i) => i.verdict);
    expect(verdicts('development state')).toEqual(['PASS']);
    expect(verdicts('key backend')).toEqual(['PASS']);
    expect(items.filter((i) => i.item === 'keys')).toEqual([]);

    const email = `prod.${engine}@example.org`;
    const res = await fetch(`${instance.url}/admin/issue-vc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-admin-api-key': ADMIN_API_KEY },
      body: JSON.stringify({
        userId: email,
        schemaId: 'membership-v1',
        vct: 'urn:vct:membership',
        expiration: new Date(Date.now() + 86_400_000).toISOString(),
        credentialSubject: {
          givenName: 'P',
          familyName: 'K',
          memberSince: '2022-01-01',
          tier: 'basic',
          memberNumber: 7,
        },
      }),
    });
    expect(res.status).toBe(201);
    const answer = (await res.json()) as { credentialId: string; uploadState: string };
    expect(answer.uploadState).toBe('uploaded');
    const holder = emulator!.emulator.state.holderByEmail(email)!;
    const stored = emulator!.emulator.state.envelopes.get(answer.credentialId)!;
    const compact = openEnvelope(
      privateKeyFromPkcs8Hex(holder.privateKeyPkcs8Hex),
      stored.envelope,
    ) as string;
    const jws = compact.split('~')[0]!;
    expect(tokenKids).toContain(decodeProtectedHeader(jws).kid);
    const meta = (await (await fetch(`${instance.url}/.well-known/jwt-vc-issuer`)).json()) as {
      jwks: { keys: JWK[] };
    };
    await jwtVerify(jws, createLocalJWKSet(meta.jwks), { typ: 'dc+sd-jwt' });
  });
});
