import { renameSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createLocalJWKSet, type JWK, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmulatorServer, startEmulatorServer } from '../../src/development/emulator/index.js';
import { generateHolderKeyPair, openEnvelope } from '../../src/envelope/index.js';
import {
  type InstanceProcess,
  isAlive,
  startInstanceProcess,
  stopInstanceProcesses,
} from '../helpers/instance-process.js';
import { removeDir, TEST_ADMIN_API_KEY, TEST_API_KEY, TEST_PARTNER_ID, tempDir } from '../helpers/issuer.js';
import { issuerJwks } from '../helpers/jwks.js';
import { newSoftHsmToken, softHsmAvailable } from '../helpers/softhsm.js';

const available = softHsmAvailable('the PKCS#11 token-down test');

const holder = generateHolderKeyPair('x25519');

// docs/security.md "Keys in a hardware security module", "Token down": a real server process
// signing in a SoftHSM2 token. The token's directory is taken away in the middle of a burst of
// hosted and direct issuances: every request either succeeded whole (recorded, uploaded, its
// credential verifiable) or answered 503 UNAVAILABLE with nothing recorded and nothing uploaded;
// /readyz answers 503 naming the key backend; when the directory is back the same process
// recovers by itself.
describe.skipIf(!available)('KEY_BACKEND=pkcs11: the token taken away mid-burst and restored', () => {
  const token = available ? newSoftHsmToken() : undefined;
  const dir = tempDir();
  let emulator: EmulatorServer;
  let instance: InstanceProcess | undefined;

  beforeAll(async () => {
    emulator = await startEmulatorServer({
      partnerId: TEST_PARTNER_ID,
      jwks: issuerJwks(() => instance?.url),
    });
    instance = await startInstanceProcess({
      databaseUrl: `sqlite:${join(dir, 'issuer.db')}`,
      serviceUrl: emulator.url,
      dir,
      env: { ...token!.env, UPLOAD_TIMEOUT_MS: '10000' },
    });
  });
  afterAll(async () => {
    if (instance) await stopInstanceProcesses([instance]);
    await emulator?.close();
    removeDir(dir);
  });

  const hosted = (holderDid: string) =>
    fetch(`${instance!.url}/issue-vc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
      body: JSON.stringify({
        holderDID: holderDid,
        pubKey: holder.publicKeyHex,
        userId: 'demo-user-1',
        schemaId: 'membership-v1',
        proofType: 'SD_JWT_VC',
      }),
    });
  const direct = (email: string) =>
    fetch(`${instance!.url}/admin/issue-vc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-admin-api-key': TEST_ADMIN_API_KEY },
      body: JSON.stringify({
        userId: email,
        schemaId: 'membership-v1',
        vct: 'urn:vct:membership',
        expiration: new Date(Date.now() + 86_400_000).toISOString(),
        credentialSubject: {
          givenName: 'T',
          familyName: 'D',
          memberSince: '2022-01-01',
          tier: 'basic',
          memberNumber: 3,
        },
      }),
    });
  const readyz = async () => {
    const res = await fetch(`${instance!.url}/readyz`);
    return {
      status: res.status,
      body: (await res.json()) as { checks: { keys: { ok: boolean; error?: string } } },
    };
  };
  const recorded = () => {
    const db = new Database(join(dir, 'issuer.db'), { readonly: true, fileMustExist: true });
    try {
      return db.prepare('SELECT holder_did, user_id FROM issuances').all() as {
        holder_did: string;
        user_id: string;
      }[];
    } finally {
      db.close();
    }
  };

  it('answers 503 UNAVAILABLE with nothing recorded or uploaded while the token is away, and recovers without a restart', async () => {
    const pid = instance!.child.pid;
    expect((await hosted('did:example:before')).status).toBe(201);
    expect((await readyz()).status).toBe(200);

    // The burst: the token goes away once a few requests have been answered.
    let answered = 0;
    let away = false;
    const outcomes: { kind: 'hosted' | 'direct'; id: string; status: number; code?: string }[] = [];
    const send = async (kind: 'hosted' | 'direct', id: string) => {
      const res = kind === 'hosted' ? await hosted(id) : await direct(id);
      const body =
        res.status === 201 && kind === 'hosted'
          ? undefined
          : ((await res.json().catch(() => undefined)) as { code?: string } | undefined);
      outcomes.push({ kind, id, status: res.status, ...(body?.code ? { code: body.code } : {}) });
      if (++answered === 4 && !away) {
        renameSync(token!.tokenDir, `${token!.tokenDir}.away`);
        away = true;
      }
    };
    const burst: Promise<void>[] = [];
    for (let n = 0; n < 24; n++) burst.push(send('hosted', `did:example:burst-${n}`));
    for (let n = 0; n < 6; n++) burst.push(send('direct', `burst.${n}@example.org`));
    await Promise.all(burst);
    expect(away).toBe(true);

    // Signatures made after the token went away fail; a few before it may have succeeded.
    for (const o of outcomes) expect([201, 503]).toContain(o.status);
    const refused = outcomes.filter((o) => o.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    for (const o of refused) expect(o.code).toBe('UNAVAILABLE');
    // While the token is away: readiness names the key backend, and every issuance is refused.
    const down = await readyz();
    expect(down.status).toBe(503);
    expect(down.body.checks.keys).toEqual({ ok: false, error: 'key backend pkcs11 cannot sign' });
    const late = await hosted('did:example:while-away');
    expect(late.status).toBe(503);
    expect(((await late.json()) as { code: string }).code).toBe('UNAVAILABLE');

    // Nothing half-way: each 201 is recorded and uploaded; no 503 left a row or an envelope.
    const rows = recorded();
    const recordedIds = new Set(
      rows.map((r) => (r.holder_did.startsWith('did:example:') ? r.holder_did : r.user_id)),
    );
    const succeeded = outcomes.filter((o) => o.status === 201);
    for (const o of succeeded.filter((s) => s.kind === 'hosted')) expect(recordedIds.has(o.id)).toBe(true);
    for (const o of refused.filter((s) => s.kind === 'hosted')) expect(recordedIds.has(o.id)).toBe(false);
    expect(recordedIds.has('did:example:while-away')).toBe(false);
    const directRows = rows.filter((r) => r.user_id.startsWith('burst.'));
    expect(new Set(directRows.map((r) => r.user_id))).toEqual(
      new Set(succeeded.filter((s) => s.kind === 'direct').map((s) => s.id)),
    );
    const uploadedHolders = [...emulator.emulator.state.envelopes.values()].map((e) => e.envelope.holderDid);
    for (const o of refused.filter((s) => s.kind === 'hosted')) expect(uploadedHolders).not.toContain(o.id);

    // The token comes back: the same process recovers by itself.
    renameSync(`${token!.tokenDir}.away`, token!.tokenDir);
    await expect.poll(async () => (await readyz()).status).toBe(200);
    expect(isAlive(instance!)).toBe(true);
    expect(instance!.child.pid).toBe(pid);
    const res = await hosted('did:example:after');
    expect(res.status).toBe(201);
    const stored = [...emulator.emulator.state.envelopes.values()].find(
      (e) => e.envelope.holderDid === 'did:example:after',
    )!;
    const compact = openEnvelope(holder.privateKey, stored.envelope) as string;
    // ISSUER_ORIGIN is not this listener, so the signature is checked alone, with the published key.
    const meta = (await (await fetch(`${instance!.url}/.well-known/jwt-vc-issuer`)).json()) as {
      jwks: { keys: JWK[] };
    };
    const { payload } = await jwtVerify(compact.split('~')[0]!, createLocalJWKSet(meta.jwks), {
      typ: 'dc+sd-jwt',
    });
    expect(payload.sub).toBe('did:example:after');
    expect((await direct('after@example.org')).status).toBe(201);
  });
});

describe.skipIf(!available)('KEY_BACKEND=pkcs11: a start the token refuses', () => {
  it('a wrong PIN is one start-up line naming PKCS11_PIN, without the PIN', async () => {
    const token = newSoftHsmToken('issuer-kit-pin');
    const dir = tempDir();
    const wrong = '97531864';
    try {
      const failed = await startInstanceProcess({
        databaseUrl: `sqlite:${join(dir, 'issuer.db')}`,
        serviceUrl: 'http://127.0.0.1:9',
        dir,
        env: { ...token.env, PKCS11_PIN: wrong },
      }).then(
        async (started) => {
          await stopInstanceProcesses([started]);
          return 'started';
        },
        (err: Error) => err.message,
      );
      expect(failed).toMatch(
        /PKCS11_PIN: the token "issuer-kit-pin" refused the login \(CKR_PIN_INCORRECT\)/,
      );
      expect(failed).not.toContain(wrong);
    } finally {
      removeDir(dir);
    }
  });
});
