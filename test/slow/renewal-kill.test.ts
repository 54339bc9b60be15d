import { once } from 'node:events';
import { cpSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { createEmulator } from '../../src/development/emulator/index.js';
import { openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { credentialIdFor } from '../../src/issuance/direct-issuance.js';
import { renewalKey } from '../../src/issuance/renewal.js';
import { type OpenedStore, openStore, parseDatabaseUrl } from '../../src/store/engines.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import {
  type InstanceProcess,
  isAlive,
  liveJwks,
  startInstanceProcess,
  stopInstanceProcesses,
} from '../helpers/instance-process.js';
import { queryStore, removeDir, TEST_ADMIN_API_KEY, TEST_PARTNER_ID, tempDir } from '../helpers/issuer.js';
import { createTempDatabase, postgresAvailable } from '../helpers/services.js';
import { webhookReceiver } from '../helpers/webhook-receiver.js';

const DAY = 86_400_000;
/** Direct credentials of each renewing schema inside the renewal window. */
const PER_SCHEMA = 10;
const KEEP = 'kill-keep-v1';
const REVOKE = 'kill-revoke-v1';
/** Where in its schema's sweep order the renewal is cut short (the credentials before it are renewed). */
const CUT_AT = 3;
/**
 * RENEWAL_SWEEP_LEASE_MS: a dead process's sweep is taken over this long after it took the lock.
 * Half of it outlasts one renewal (ADMIN_ISSUE_DEADLINE_MS), as the server requires: a renewal the
 * sweep took is over before another process can take the lock.
 */
const LEASE_MS = 6000;
const DEADLINE_MS = 2500;

interface Engine {
  name: string;
  /**
   * SQLite: one sweeping process, killed and started again. PostgreSQL: two, the sweeping one
   * killed (the other takes over once its lease has passed), then that one killed too, and a new
   * instance started.
   */
  sweepers: 1 | 2;
  database: () => Promise<{ url: string; drop(): Promise<void> }>;
  /** KEYS_DIR per instance: shared on SQLite (key files), each its own on PostgreSQL (keys in the database). */
  sharedDir: boolean;
}

const engines: Engine[] = [
  {
    name: 'sqlite',
    sweepers: 1,
    sharedDir: true,
    database: async () => {
      const dir = tempDir();
      return { url: `sqlite:${join(dir, 'issuer.db')}`, drop: async () => removeDir(dir) };
    },
  },
];
if (await postgresAvailable('the renewal sweep SIGKILL test on PostgreSQL'))
  engines.push({ name: 'postgres', sweepers: 2, sharedDir: false, database: () => createTempDatabase() });

const admin = async (url: string, path: string, body?: unknown) => {
  const res = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', 'x-admin-api-key': TEST_ADMIN_API_KEY },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

/**
 * The hosting-service emulator behind a gate that holds, unanswered, the first upload of each
 * credential in `holdFirst` until `cut(id)` closes its connection: the renewal uploading it stays
 * in flight, its credential recorded and its outcome not yet written. Each instance reaches it
 * under a base URL of its own (`url(name)`), so that a held upload names the instance that sent
 * it; `onHold` is called the moment one is held.
 */
async function gatedEmulator(jwks: () => Promise<{ keys: [] }>, holdFirst: Set<string>, onHold: () => void) {
  const emulator = createEmulator({ partnerId: TEST_PARTNER_ID, jwks });
  const held = new Map<string, { res: ServerResponse; sender: string }>();
  const seen = new Set<string>();
  const app = express();
  app.use('/:sender/v1', express.json({ limit: '1mb' }), (req, res, next) => {
    const id = req.method === 'POST' && req.path === '/dstorage/vcs' ? req.body?.externalId : undefined;
    if (typeof id === 'string' && holdFirst.has(id) && !seen.has(id)) {
      seen.add(id);
      const sender = String(req.params.sender);
      held.set(id, { res, sender });
      onHold();
      return;
    }
    next();
  });
  app.use('/:sender/v1', emulator.router);
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: (name: string) => `${base}/${name}/v1`,
    state: emulator.state,
    /** The credentials whose first upload is held (or was, until cut). */
    held: () => [...held.keys()],
    /** The instance that sent a held upload. */
    sender: (id: string) => held.get(id)?.sender,
    cut(id: string) {
      held.get(id)?.res.socket?.destroy();
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}

/** A schema file whose direct credentials are renewed within 30 days of their expiry. */
const schemaFile = (schemaId: string, revokePrevious: boolean) => ({
  schemaId,
  proofTypes: ['SD_JWT_VC'],
  expiresInSeconds: 31_536_000,
  credentialSubject: {
    type: 'object',
    properties: { name: { type: 'string' }, tier: { type: 'string' } },
    required: ['name', 'tier'],
  },
  claims: { provider: 'sqlite' },
  sdJwt: { vct: `urn:vct:${schemaId}` },
  renewal: { beforeExpirySeconds: 30 * 86_400, revokePrevious },
});

/** What a received or recorded event is about: its type and the credential it names. */
const eventKey = (type: string, data: Record<string, unknown>) =>
  `${type} ${String(type === 'credential.renewed' ? data.renewedFrom : data.credentialId)}`;

interface Seeded {
  credentialId: string;
  schemaId: string;
  email: string;
  revocationNonce: number;
  /** The credential that renews it (its id is derived from this one's). */
  renewing: string;
}

// docs/operations.md "Renewal": a real server process sweeping renewals is SIGKILLed while one
// renewal is cut short (its credential recorded, its upload in flight, its outcome not written)
// and others are done; a process started again (SQLite) or the other live instance once the
// sweep's lease has passed (PostgreSQL, then a new instance after a second kill) finishes the
// sweep. Every due credential is renewed once, the new credentials verify with an independent
// SD-JWT VC verifier, the previous ones are revoked or left valid as their schema says, and each
// renewal has one audit row and one `credential.renewed` event, delivered at least once.
describe.each(engines)('a renewal sweep SIGKILLed mid-way ($name)', ({ sweepers, sharedDir, database }) => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('renews every due credential exactly once across the kill', async () => {
    const db = await database();
    cleanup.push(() => db.drop());
    const work = tempDir();
    cleanup.push(() => removeDir(work));
    const schemas = join(work, 'schemas');
    cpSync(resolve('schemas'), schemas, { recursive: true });
    writeFileSync(join(schemas, 'kill-keep.json'), JSON.stringify(schemaFile(KEEP, false)));
    writeFileSync(join(schemas, 'kill-revoke.json'), JSON.stringify(schemaFile(REVOKE, true)));

    const instances: InstanceProcess[] = [];
    const named = new Map<string, InstanceProcess>();
    cleanup.push(() => stopInstanceProcesses(instances));
    // From the moment a cut renewal's upload is held until the test has killed its sender, every
    // live process stands still (SIGSTOP), however slow the machine: the sender cannot give up
    // waiting and finish that renewal, and no other can take the sweep over. One that finishes
    // starting meanwhile is stopped as soon as it is known.
    const stopped = new Set<InstanceProcess>();
    let holding = false;
    const stop = (i: InstanceProcess) => {
      if (!isAlive(i)) return;
      i.child.kill('SIGSTOP');
      stopped.add(i);
    };
    const resume = () => {
      holding = false;
      for (const i of stopped) if (isAlive(i)) i.child.kill('SIGCONT');
      stopped.clear();
    };
    cleanup.push(resume);
    // The credentials whose renewal is cut short, one per kill; filled in once they are issued.
    const holdFirst = new Set<string>();
    let lastJwks: { keys: [] } = { keys: [] };
    const emulator = await gatedEmulator(
      async () => {
        const live = await liveJwks(instances.filter((i) => !stopped.has(i)));
        if (live.keys.length > 0) lastJwks = live;
        return lastJwks;
      },
      holdFirst,
      () => {
        holding = true;
        for (const i of instances) stop(i);
      },
    );
    cleanup.push(() => emulator.close());
    const hook = await webhookReceiver();
    cleanup.push(() => hook.close());

    const shared = tempDir();
    cleanup.push(() => removeDir(shared));
    const start = async (name: string, env: Record<string, string>) => {
      const dir = sharedDir ? shared : tempDir();
      if (!sharedDir) cleanup.push(() => removeDir(dir));
      const instance = await startInstanceProcess({
        databaseUrl: db.url,
        serviceUrl: emulator.url(name),
        dir,
        env: {
          SCHEMAS_DIR: schemas,
          REDIS_URL: '',
          RENEWAL_SWEEP_LEASE_MS: String(LEASE_MS),
          ADMIN_ISSUE_DEADLINE_MS: String(DEADLINE_MS),
          // An upload left by a killed process is taken over once its lease has passed.
          UPLOAD_TIMEOUT_MS: '5000',
          UPLOAD_LEASE_MS: '6000',
          OUTBOX_SWEEP_MS: '100',
          WEBHOOK_RETRY_BASE_MS: '50',
          // The receiver answers at once: a delivery taken by a killed process goes out again soon.
          WEBHOOK_LEASE_MS: '3000',
          ...env,
        },
      });
      instances.push(instance);
      named.set(name, instance);
      if (holding) stop(instance);
      return instance;
    };

    // Seeded by a process that never sweeps, so that the sweep starts with every credential due.
    // The seeder never sweeps; its issuances wait for their uploads however busy the machine is
    // (the sweepers' short deadline is for the lease takeover, not for seeding).
    const seeder = await start('seeder', {
      RENEWAL_SWEEP_INTERVAL_MS: '86400000',
      ADMIN_ISSUE_DEADLINE_MS: '60000',
      RENEWAL_SWEEP_LEASE_MS: '121000',
    });
    const target = parseDatabaseUrl(db.url, process.cwd());
    if (typeof target === 'string') throw new Error(target);
    const store: OpenedStore = await openStore(target, { poolMax: 2 });
    cleanup.push(() => store.close());

    const added = await admin(seeder.url, '/admin/webhooks', {
      url: hook.url,
      events: ['credential.issued', 'credential.renewed', 'credential.revoked'],
    });
    expect(added.status).toBe(201);
    hook.setSecret(added.body.secret as string);

    const claims = (tier: string) =>
      admin(seeder.url, '/admin/claims', {
        records: [KEEP, REVOKE].flatMap((schemaId) =>
          Array.from({ length: PER_SCHEMA }, (_, n) => ({
            userId: `${schemaId}-${n}`,
            schemaId,
            claims: { name: `Holder ${n}`, tier },
          })),
        ),
      });
    expect((await claims('silver')).status).toBe(200);
    const seeded: Seeded[] = [];
    for (const schemaId of [KEEP, REVOKE]) {
      const issued = await Promise.all(
        Array.from({ length: PER_SCHEMA }, async (_, n) => {
          const email = `${schemaId}.${n}@example.org`;
          const res = await admin(seeder.url, '/admin/issue-vc', {
            userId: email,
            schemaId,
            vct: `urn:vct:${schemaId}`,
            // Inside the window, in the sweep's order (soonest expiry first).
            expiration: new Date(Date.now() + (5 + n) * DAY).toISOString(),
            claimsUserId: `${schemaId}-${n}`,
          });
          expect(res.status).toBe(201);
          const credentialId = res.body.credentialId as string;
          return {
            credentialId,
            schemaId,
            email,
            revocationNonce: Number(res.body.revocationNonce),
            renewing: credentialIdFor(renewalKey(credentialId)),
          };
        }),
      );
      seeded.push(...issued);
    }
    // The provider's claims change: a renewal carries the new ones.
    expect((await claims('gold')).status).toBe(200);
    await stopInstanceProcesses([seeder]);

    const bySchema = (schemaId: string) => seeded.filter((s) => s.schemaId === schemaId);
    // One cut short per kill, each in a schema of its own: whichever schema the sweep takes first,
    // the kills come after renewals were done and before the last.
    const cuts = (sweepers === 1 ? [REVOKE] : [REVOKE, KEEP]).map((s) => bySchema(s)[CUT_AT]!);
    for (const c of cuts) holdFirst.add(c.renewing);

    const sweeping = { RENEWAL_SWEEP_INTERVAL_MS: '100' };
    await Promise.all(Array.from({ length: sweepers }, (_, n) => start(`sweeper-${n}`, sweeping)));
    const ownerPid = async () => {
      const rows = await queryStore<{ owner: string }>(
        store,
        "SELECT owner FROM named_locks WHERE name = 'renewal-sweep'",
      );
      // The sweep's owner is `host:pid:random` (src/issuance/renewal.ts).
      return Number(rows[0]?.owner.split(':').at(-2));
    };
    const outcomes = async () =>
      new Map(
        (
          await queryStore<{ credential_id: string; renewed_by: string }>(
            store,
            "SELECT credential_id, renewed_by FROM renewals WHERE outcome = 'renewed'",
          )
        ).map((r) => [r.credential_id, r.renewed_by]),
      );
    const renewingOf = async (credentialId: string) =>
      queryStore<{ credential_id: string; upload_state: string }>(
        store,
        'SELECT credential_id, upload_state FROM issuances WHERE renewed_from = ?',
        [credentialId],
      );

    const killed: InstanceProcess[] = [];
    // One kill per cut credential, in the order the sweep reaches them.
    const handled = new Set<string>();
    for (let k = 0; k < cuts.length; k++) {
      const heldCut = () =>
        cuts.find((c) => !handled.has(c.renewing) && emulator.held().includes(c.renewing));
      await expect.poll(() => heldCut() !== undefined).toBe(true);
      const cut = heldCut()!;
      handled.add(cut.renewing);
      // The process that sent the held upload, stopped since, is the one holding the sweep's lock
      // (it took the cut credential before half its lease, and a renewal ends within the other half).
      const holder = named.get(emulator.sender(cut.renewing)!)!;
      expect(isAlive(holder)).toBe(true);
      expect(stopped.has(holder)).toBe(true);
      expect(await ownerPid()).toBe(holder.child.pid);
      if (k > 0) expect(killed).not.toContain(holder);
      holder.child.kill('SIGKILL');
      await once(holder.child, 'exit');
      killed.push(holder);
      emulator.cut(cut.renewing);

      // Left behind, with every other process still stopped: the cut renewal's credential recorded
      // and not uploaded, no outcome for it; some renewed before it, others not yet.
      const done = await outcomes();
      expect(done.has(cut.credentialId)).toBe(false);
      expect(await renewingOf(cut.credentialId)).toEqual([
        { credential_id: cut.renewing, upload_state: 'pending' },
      ]);
      expect(done.size).toBeGreaterThanOrEqual(CUT_AT + k);
      expect(done.size).toBeLessThan(seeded.length);
      resume();
      const remaining = instances.filter(isAlive);
      if (remaining.length === 0) {
        // No instance left: a new one, which waits out the dead one's lease.
        await start(`restarted-${k}`, sweeping);
      } else {
        // The other live instance takes the sweep over once the dead one's lease has passed.
        const survivor = remaining[0]!;
        await expect
          .poll(() => survivor.output.some((l) => l.includes(`"renewedFrom":"${cut.credentialId}"`)))
          .toBe(true);
        expect((await outcomes()).get(cut.credentialId)).toBe(cut.renewing);
      }
    }
    expect(killed.every((i) => i.child.signalCode === 'SIGKILL')).toBe(true);
    const last = instances.find(isAlive)!;

    // Finished: every due credential renewed, each renewing credential uploaded, every event fanned
    // out and every delivery made.
    const unfinished = async () => {
      const done = await outcomes();
      const uploads = await queryStore<{ credential_id: string }>(
        store,
        "SELECT credential_id FROM issuances WHERE renewed_from IS NOT NULL AND upload_state <> 'uploaded'",
      );
      const deliveries = await queryStore<{ n: number }>(
        store,
        "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE state <> 'delivered'",
      );
      const unfanned = await queryStore<{ n: number }>(
        store,
        'SELECT COUNT(*) AS n FROM webhook_events WHERE fanned_out = 0',
      );
      const heard = new Set(hook.attempts.map((r) => eventKey(r.type, r.data)));
      return [
        ...seeded.filter((s) => !done.has(s.credentialId)).map((s) => `renewal of ${s.credentialId}`),
        ...uploads.map((u) => `upload of ${u.credential_id}`),
        ...seeded.map((s) => `credential.renewed ${s.credentialId}`).filter((key) => !heard.has(key)),
        ...(Number(deliveries[0]!.n) > 0 ? [`${deliveries[0]!.n} deliveries`] : []),
        ...(Number(unfanned[0]!.n) > 0 ? [`${unfanned[0]!.n} events not fanned out`] : []),
      ];
    };
    await expect.poll(unfinished, { timeout: 300_000, interval: 100 }).toEqual([]);

    // Exactly once: one renewing credential each, the one derived from it, linked both ways.
    const done = await outcomes();
    for (const s of seeded) {
      expect(await renewingOf(s.credentialId)).toEqual([
        { credential_id: s.renewing, upload_state: 'uploaded' },
      ]);
      expect(done.get(s.credentialId)).toBe(s.renewing);
    }
    const total = await queryStore<{ n: number }>(store, 'SELECT COUNT(*) AS n FROM issuances');
    expect(Number(total[0]!.n)).toBe(2 * seeded.length);

    // The audit: one `renew` per renewed credential, one `issue` per renewing credential, one
    // `revoke` per previous credential of the schema that revokes it, and no other.
    const audit = await queryStore<{ action: string; target: string; actor: string }>(
      store,
      "SELECT action, target, actor FROM audit_log WHERE action IN ('renew', 'issue', 'revoke', 'renewal.skipped')",
    );
    const rows = (action: string) =>
      audit
        .filter((a) => a.action === action)
        .map((a) => a.target)
        .sort();
    const ids = (list: Seeded[], key: (s: Seeded) => string) => list.map(key).sort();
    expect(rows('renew')).toEqual(ids(seeded, (s) => s.credentialId));
    expect(audit.filter((a) => a.action === 'renew').every((a) => a.actor === 'renewal-sweep')).toBe(true);
    expect(rows('issue')).toEqual(
      [...ids(seeded, (s) => s.credentialId), ...ids(seeded, (s) => s.renewing)].sort(),
    );
    expect(rows('revoke')).toEqual(ids(bySchema(REVOKE), (s) => String(s.revocationNonce)));
    expect(rows('renewal.skipped')).toEqual([]);

    // The events: each once in the database, and at the receiver under one webhook-id (at least
    // once: a delivery the killed process had made may come again, with the same id), signed.
    const expected = [
      ...seeded.map((s) => `credential.renewed ${s.credentialId}`),
      ...seeded.flatMap((s) => [`credential.issued ${s.credentialId}`, `credential.issued ${s.renewing}`]),
      ...bySchema(REVOKE).map((s) => `credential.revoked ${s.credentialId}`),
    ].sort();
    const events = await queryStore<{ type: string; data: string }>(
      store,
      "SELECT type, data FROM webhook_events WHERE type IN ('credential.issued', 'credential.renewed', 'credential.revoked')",
    );
    expect(events.map((e) => eventKey(e.type, JSON.parse(e.data))).sort()).toEqual(expected);
    expect(hook.attempts.filter((r) => !r.valid)).toEqual([]);
    const heard = new Map<string, Set<string>>();
    for (const r of hook.attempts) {
      const key = eventKey(r.type, r.data);
      heard.set(key, (heard.get(key) ?? new Set()).add(r.id));
    }
    expect([...heard.keys()].sort()).toEqual(expected);
    expect([...heard].filter(([, webhookIds]) => webhookIds.size !== 1)).toEqual([]);
    for (const s of seeded)
      expect(
        hook.attempts.find((r) => r.type === 'credential.renewed' && r.data.renewedFrom === s.credentialId)
          ?.data,
      ).toEqual({ credentialId: s.renewing, renewedFrom: s.credentialId, schemaId: s.schemaId });

    // Each renewing credential as its holder gets it: it verifies, with the provider's new claims;
    // the previous one is revoked (status list) or still valid, as its schema says.
    const opened = (email: string, credentialId: string) => {
      const holder = emulator.state.holderByEmail(email)!;
      const stored = emulator.state.envelopes.get(credentialId)!;
      return openEnvelope(privateKeyFromPkcs8Hex(holder.privateKeyPkcs8Hex), stored.envelope) as string;
    };
    const verify = (compact: string) => verifySdJwtVc(last.url, compact, { statusListsFrom: last.url });
    for (const s of seeded) {
      const renewed = await verify(opened(s.email, s.renewing));
      expect(renewed.claims).toMatchObject({
        id: `urn:uuid:${s.renewing}`,
        vct: `urn:vct:${s.schemaId}`,
        tier: 'gold',
      });
      const previous = opened(s.email, s.credentialId);
      if (s.schemaId === KEEP) expect((await verify(previous)).claims).toMatchObject({ tier: 'silver' });
      else await expect(verify(previous)).rejects.toThrow('Status is not valid');
    }
    const statuses = await queryStore<{ credential_id: string; status: number }>(
      store,
      'SELECT credential_id, status FROM issuances',
    );
    const statusOf = new Map(statuses.map((r) => [r.credential_id, Number(r.status)]));
    for (const s of seeded) {
      expect(statusOf.get(s.renewing)).toBe(0);
      expect(statusOf.get(s.credentialId)).toBe(s.schemaId === REVOKE ? 1 : 0);
    }

    // No renewal failed and had to be tried again: what was cut short was finished, not redone.
    for (const i of instances) expect(i.output.filter((l) => l.includes('renewal_failed'))).toEqual([]);
  });
});
