import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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
import { newSoftHsmToken, softHsmAvailable, userPinLogin } from '../helpers/softhsm.js';

const available = softHsmAvailable('the PKCS#11 PIN-change test');

const holder = generateHolderKeyPair('x25519');
const NEW_PIN = '80604020';

type Phase = 'before' | 'changed' | 'away';
interface Outcome {
  kind: 'hosted' | 'direct';
  id: string;
  sentIn: Phase;
  answeredIn: Phase;
  status: number;
  code?: string;
  credentialId?: string;
}
interface HistoryRow {
  credentialId: string;
  channel: 'hosted' | 'direct';
  holderDid: string;
  uploadState: string;
  storagePath: string | null;
}

// docs/security.md "Keys in a hardware security module": a real server process on SQLite signing in a
// SoftHSM2 token, PKCS11_PIN_FILE naming its PIN. In the middle of a burst of hosted and direct
// issuances the user PIN is changed on the token by another application; the login the server
// holds keeps signing (PKCS#11 logins outlive a PIN change), while a new login with the old PIN
// is refused. Then the token goes away and comes back (an HSM restart), so the server must log in
// again: it is refused, and answers 503 UNAVAILABLE naming the key backend, recording and
// uploading nothing, until the operator writes the new PIN into PKCS11_PIN_FILE; the same
// process then recovers by itself.
describe.skipIf(!available)('KEY_BACKEND=pkcs11: the PIN changed on the token mid-burst', () => {
  const token = available ? newSoftHsmToken('issuer-kit-pin-change') : undefined;
  const dir = tempDir();
  const pinFile = join(dir, 'pkcs11-pin');
  let emulator: EmulatorServer;
  let instance: InstanceProcess | undefined;

  beforeAll(async () => {
    writeFileSync(pinFile, `${token!.pin}\n`, { mode: 0o600 });
    const { PKCS11_PIN: _, ...tokenEnv } = token!.env;
    emulator = await startEmulatorServer({
      partnerId: TEST_PARTNER_ID,
      jwks: issuerJwks(() => instance?.url),
    });
    instance = await startInstanceProcess({
      databaseUrl: `sqlite:${join(dir, 'issuer.db')}`,
      serviceUrl: emulator.url,
      dir,
      env: { ...tokenEnv, PKCS11_PIN_FILE: pinFile, UPLOAD_TIMEOUT_MS: '10000' },
    });
  });
  afterAll(async () => {
    if (instance) await stopInstanceProcesses([instance]);
    await emulator?.close();
    removeDir(dir);
  });

  let phase: Phase = 'before';
  const outcomes: Outcome[] = [];
  const send = async (kind: 'hosted' | 'direct', id: string): Promise<Outcome> => {
    const sentIn = phase;
    const res =
      kind === 'hosted'
        ? await fetch(`${instance!.url}/issue-vc`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY },
            body: JSON.stringify({
              holderDID: id,
              pubKey: holder.publicKeyHex,
              userId: 'demo-user-1',
              schemaId: 'membership-v1',
              proofType: 'SD_JWT_VC',
            }),
          })
        : await fetch(`${instance!.url}/admin/issue-vc`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-admin-api-key': TEST_ADMIN_API_KEY },
            body: JSON.stringify({
              userId: id,
              schemaId: 'membership-v1',
              vct: 'urn:vct:membership',
              expiration: new Date(Date.now() + 86_400_000).toISOString(),
              credentialSubject: {
                givenName: 'P',
                familyName: 'C',
                memberSince: '2022-01-01',
                tier: 'basic',
                memberNumber: 5,
              },
            }),
          });
    const body =
      res.status === 201 && kind === 'hosted'
        ? undefined
        : ((await res.json().catch(() => undefined)) as { code?: string; credentialId?: string } | undefined);
    const outcome: Outcome = {
      kind,
      id,
      sentIn,
      answeredIn: phase,
      status: res.status,
      ...(body?.code ? { code: body.code } : {}),
      ...(body?.credentialId ? { credentialId: body.credentialId } : {}),
    };
    outcomes.push(outcome);
    return outcome;
  };
  const readyz = async () => {
    const res = await fetch(`${instance!.url}/readyz`);
    return {
      status: res.status,
      body: (await res.json()) as { checks: { keys: { ok: boolean; error?: string } } },
    };
  };
  const history = async (): Promise<HistoryRow[]> => {
    const rows: HistoryRow[] = [];
    let cursor: string | null = null;
    do {
      const res = await fetch(
        `${instance!.url}/admin/issuance-history?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
        { headers: { 'x-admin-api-key': TEST_ADMIN_API_KEY } },
      );
      expect(res.status).toBe(200);
      const page = (await res.json()) as { data: HistoryRow[]; pagination: { nextCursor: string | null } };
      rows.push(...page.data);
      cursor = page.pagination.nextCursor;
    } while (cursor);
    return rows;
  };
  const logLines = (pattern: RegExp) => instance!.output.filter((l) => pattern.test(l)).length;

  it('keeps signing on its login, refuses with 503 UNAVAILABLE once it must log in again, records nothing half-way, and follows PKCS11_PIN_FILE without a restart', async () => {
    const pid = instance!.child.pid;
    const published = async () =>
      (
        (await (await fetch(`${instance!.url}/.well-known/jwt-vc-issuer`)).json()) as {
          jwks: { keys: JWK[] };
        }
      ).jwks.keys;
    const kidsBefore = (await published()).map((k) => k.kid);
    expect((await send('hosted', 'did:example:pin-before')).status).toBe(201);
    expect((await readyz()).status).toBe(200);

    // The burst: six hosted and two direct issuances in flight at any time, until a few sent
    // after the PIN change and a few sent after the token went away have been answered.
    let stop = false;
    const waiters: { done: () => boolean; resolve: () => void }[] = [];
    const answeredSentIn = (p: Phase, n: number) =>
      new Promise<void>((resolve) =>
        waiters.push({ done: () => outcomes.filter((o) => o.sentIn === p).length >= n, resolve }),
      );
    const worker = async (kind: 'hosted' | 'direct', w: number) => {
      for (let n = 0; !stop; n++) {
        await send(kind, kind === 'hosted' ? `did:example:pin-${w}-${n}` : `pin.${w}.${n}@example.org`);
        for (const waiter of waiters.filter((x) => x.done())) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
    };
    const burst = [
      ...Array.from({ length: 6 }, (_, w) => worker('hosted', w)),
      ...Array.from({ length: 2 }, (_, w) => worker('direct', w)),
    ];
    await answeredSentIn('before', 5);
    // Another application changes the user PIN while the server's issuances are in flight.
    expect(await userPinLogin(token!, token!.pin, NEW_PIN)).toBe('ok');
    phase = 'changed';
    // From now on a new login with the old PIN is refused; the new one logs in.
    expect(await userPinLogin(token!, token!.pin)).toBe('CKR_PIN_INCORRECT');
    expect(await userPinLogin(token!, NEW_PIN)).toBe('ok');
    await answeredSentIn('changed', 8);
    // The token goes away (an HSM restarting) with issuances still in flight.
    renameSync(token!.tokenDir, `${token!.tokenDir}.away`);
    phase = 'away';
    await answeredSentIn('away', 8);
    stop = true;
    await Promise.all(burst);

    for (const o of outcomes) expect([201, 503]).toContain(o.status);
    for (const o of outcomes.filter((x) => x.status === 503)) expect(o.code).toBe('UNAVAILABLE');
    // The PIN change alone took nothing down: the server's login signed everything sent after it.
    const afterChange = outcomes.filter((o) => o.sentIn === 'changed' && o.answeredIn === 'changed');
    expect(afterChange.length).toBeGreaterThan(0);
    for (const o of afterChange) expect(o.status).toBe(201);

    // The token is away: readiness names the key backend.
    await expect.poll(async () => (await readyz()).status).toBe(503);
    expect((await readyz()).body.checks.keys).toEqual({ ok: false, error: 'key backend pkcs11 cannot sign' });

    // The token is back with its new PIN: the server must log in again, with the old PIN of its
    // file, and the token refuses it. Everything is refused, with the token present.
    renameSync(`${token!.tokenDir}.away`, token!.tokenDir);
    await expect
      .poll(async () => {
        await readyz();
        return logLines(/PKCS11_PIN: the token .{0,4}issuer-kit-pin-change.{0,4} refused/);
      })
      .toBeGreaterThan(0);
    const refusedAt = outcomes.length;
    await Promise.all([
      ...Array.from({ length: 8 }, (_, n) => send('hosted', `did:example:pin-refused-${n}`)),
      ...Array.from({ length: 2 }, (_, n) => send('direct', `pin.refused.${n}@example.org`)),
    ]);
    for (const o of outcomes.slice(refusedAt)) expect([o.status, o.code]).toEqual([503, 'UNAVAILABLE']);
    const down = await readyz();
    expect(down.status).toBe(503);
    expect(down.body.checks.keys).toEqual({ ok: false, error: 'key backend pkcs11 cannot sign' });
    // The refused PIN is not presented again: every later failure stops before the token, which
    // would lock the PIN after a few wrong tries (SoftHSM keeps no count, so the log tells).
    expect(logLines(/refused the login \(CKR_PIN_INCORRECT\)/)).toBeLessThanOrEqual(1);
    expect(
      logLines(
        /refused this PIN \(CKR_PIN_INCORRECT\); it is not tried again until PKCS11_PIN_FILE is written/,
      ),
    ).toBeGreaterThan(0);

    // The operator writes the token's new PIN into PKCS11_PIN_FILE: the same process recovers.
    writeFileSync(pinFile, `${NEW_PIN}\n`, { mode: 0o600 });
    await expect.poll(async () => (await readyz()).status).toBe(200);
    expect(isAlive(instance!)).toBe(true);
    expect(instance!.child.pid).toBe(pid);
    expect((await published()).map((k) => k.kid)).toEqual(kidsBefore);
    const after = await send('hosted', 'did:example:pin-after');
    expect(after.status).toBe(201);
    expect((await send('direct', 'pin.after@example.org')).status).toBe(201);
    const stored = [...emulator.emulator.state.envelopes.values()].find(
      (e) => e.envelope.holderDid === 'did:example:pin-after',
    )!;
    const compact = openEnvelope(holder.privateKey, stored.envelope) as string;
    // ISSUER_ORIGIN is not this listener, so the signature is checked alone, with the published key.
    const { payload } = await jwtVerify(
      compact.split('~')[0]!,
      createLocalJWKSet({ keys: await published() }),
      {
        typ: 'dc+sd-jwt',
      },
    );
    expect(payload.sub).toBe('did:example:pin-after');

    // Nothing half-way: the history holds exactly what answered 201, each uploaded, and the
    // hosting service holds exactly what the history says it uploaded.
    const rows = await history();
    const ok = outcomes.filter((o) => o.status === 201);
    expect(
      rows
        .filter((r) => r.channel === 'hosted')
        .map((r) => r.holderDid)
        .sort(),
    ).toEqual(
      ok
        .filter((o) => o.kind === 'hosted')
        .map((o) => o.id)
        .sort(),
    );
    expect(
      rows
        .filter((r) => r.channel === 'direct')
        .map((r) => r.credentialId)
        .sort(),
    ).toEqual(
      ok
        .filter((o) => o.kind === 'direct')
        .map((o) => o.credentialId)
        .sort(),
    );
    for (const r of rows) expect(r.uploadState).toBe('uploaded');
    const envelopes = [...emulator.emulator.state.envelopes.values()];
    expect(envelopes.map((e) => e.response.storagePath).sort()).toEqual(
      rows.map((r) => r.storagePath).sort(),
    );
    expect(outcomes.filter((o) => o.status === 503).length).toBeGreaterThan(0);

    // Neither PIN was ever written to the output.
    const output = instance!.output.join('\n');
    expect(output).not.toContain(token!.pin);
    expect(output).not.toContain(NEW_PIN);
  });
});
