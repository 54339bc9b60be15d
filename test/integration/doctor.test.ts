import { generateKeyPairSync } from 'node:crypto';
import { once } from 'node:events';
import { chmodSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECKS } from '../../src/cli/doctor.js';
import { generateMissingKeys } from '../../src/cli/keys.js';
import { DEVELOPMENT_KEY_ENCRYPTION_KEY } from '../../src/config/key-encryption-key.js';
import { rotateKey } from '../../src/keys/key-ring.js';
import { attester } from '../helpers/attesters.js';
import { runCli } from '../helpers/cli.js';
import {
  queryStore,
  removeDir,
  startIssuer,
  TEST_ADMIN_API_KEY,
  TEST_API_KEY,
  TEST_PARTNER_ID,
  type TestIssuer,
  tempDir,
} from '../helpers/issuer.js';
import { redisAvailable, TEST_REDIS_URL } from '../helpers/services.js';

interface Line {
  item: string;
  verdict: 'PASS' | 'WARN' | 'FAIL';
  detail: string;
}

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

// `admin doctor` against a real production-mode server on loopback (its public origin is
// https://issuer.example.com; `--origin` fetches the documents from the loopback listener).
describe('admin doctor', () => {
  const dir = tempDir();
  const schemasDir = join(dir, 'schemas');
  const keysDir = join(dir, 'keys');
  let issuer: TestIssuer;
  let claimsServer: Server;
  let claimsAnswer: { status: number; body: unknown } = { status: 200, body: { eligible: false } };
  let env: Record<string, string>;

  const doctor = (args: string[], extra: Record<string, string> = {}) =>
    runCli(['doctor', ...args], { ...env, ...extra }, dir);
  const verdicts = (lines: Line[]) => lines.map((l) => `${l.verdict} ${l.item}`);
  // Every item reported is one a check declares (`<x>` a variable part), in the checks' order.
  const declared = CHECKS.flatMap((c) => c.items).map(
    (name) => new RegExp(`^${name.replace(/<\w+>/g, '.+')}$`),
  );
  const declaredOrder = (lines: Line[]) => lines.map((l) => declared.findIndex((re) => re.test(l.item)));

  beforeAll(async () => {
    claimsServer = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(claimsAnswer.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(claimsAnswer.body));
      });
    });
    const claimsUrl = await listen(claimsServer);
    cpSync(resolve('schemas'), schemasDir, { recursive: true });
    writeFileSync(
      join(schemasDir, 'staff-v1.json'),
      JSON.stringify({
        schemaId: 'staff-v1',
        proofTypes: ['SD_JWT_VC'],
        credentialSubject: { type: 'object', properties: { role: { type: 'string' } } },
        claims: { provider: 'http', url: `${claimsUrl}/claims` },
        sdJwt: { vct: 'urn:vct:staff' },
      }),
    );
    const serverEnv = {
      NODE_ENV: 'production',
      ISSUER_ORIGIN: 'https://issuer.example.com',
      ALLOW_INSECURE_UPSTREAM: '1',
      // A webhook receiver on this machine (the failed-deliveries case).
      WEBHOOK_ALLOW_PRIVATE: '1',
      SCHEMAS_DIR: schemasDir,
    };
    issuer = await startIssuer({
      dir,
      env: serverEnv,
      exampleClaimsFile: '',
      // The broken-setup case rotates a key on disk that the running server must not have loaded:
      // no reload of KEYS_DIR while the tests run (it polls every 2 s by default), however slow.
      context: { keysPollMs: 3_600_000 },
      prepare: async () => {
        await generateMissingKeys(keysDir, { production: true });
      },
    });
    env = {
      ...serverEnv,
      DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
      KEYS_DIR: keysDir,
      API_KEY: TEST_API_KEY,
      ADMIN_API_KEY: TEST_ADMIN_API_KEY,
      PARTNER_ID: TEST_PARTNER_ID,
      SERVICE_V1_BASE_URL: issuer.ctx.config.serviceBaseUrl!,
    };
    // One issuance opens status list partition 0.
    const res = await issuer.admin('/admin/issue-vc', {
      userId: 'doctor.one@example.org',
      schemaId: 'membership-v1',
      vct: 'urn:vct:membership',
      expiration: new Date(Date.now() + 86400_000).toISOString(),
      credentialSubject: {
        givenName: 'A',
        familyName: 'B',
        memberSince: '2020-01-01',
        tier: 'gold',
        memberNumber: 1,
      },
    });
    expect(res.status).toBe(201);
  });
  afterAll(async () => {
    await issuer.close();
    claimsServer.close();
    removeDir(dir);
  });

  it('a healthy setup: every item passes; --origin, ALLOW_INSECURE_UPSTREAM=1 and the bundled example schema are the warnings; exit 0', async () => {
    const run = await doctor(['--json', '--origin', issuer.url]);
    const { ok, items } = JSON.parse(run.stdout) as { ok: boolean; items: Line[] };
    expect(verdicts(items)).toEqual([
      'PASS production',
      'WARN insecure upstream',
      'PASS origin https',
      'WARN origin fetched',
      'PASS key files',
      'PASS development state',
      'PASS database',
      'PASS iden3 key',
      'PASS did.json',
      'PASS jwt-vc-issuer',
      'PASS jwks.json',
      'PASS status list 0',
      'PASS outbox',
      'PASS webhooks',
      'PASS schemas',
      'PASS claims staff-v1',
      'WARN example schema',
      'PASS partner JWT',
    ]);
    expect(ok).toBe(true);
    const order = declaredOrder(items);
    expect(order).not.toContain(-1);
    expect(order).toEqual([...order].sort((x, y) => x - y));
    // The bundled example (its vct on issuer.example) is served as if it were the issuer's own.
    expect(items.find((l) => l.item === 'example schema')?.detail).toMatch(/^membership-v1 /);
    expect(run.code).toBe(0);
    // ALLOW_INSECURE_UPSTREAM=1 with an http SERVICE_V1_BASE_URL (the emulator here) is told, not passed silently.
    expect(items.find((l) => l.item === 'insecure upstream')?.detail).toMatch(
      /^ALLOW_INSECURE_UPSTREAM=1: .* plain http to SERVICE_V1_BASE_URL http:\/\/127\.0\.0\.1:/,
    );
    expect(items.find((l) => l.item === 'claims staff-v1')?.detail).toMatch(/eligible:false for doctor-/);
    expect(items.find((l) => l.item === 'partner JWT')?.detail).toMatch(/accepted the JWT .* \(400\)/);
    // On SQLite the Iden3 key is the KEYS_DIR file (sealing is PostgreSQL's: doctor-postgres.test.ts).
    const bjjFile = join(keysDir, 'iden3-bjj.json');
    const { publicKey } = JSON.parse(readFileSync(bjjFile, 'utf8')) as { publicKey: string };
    expect(items.find((l) => l.item === 'iden3 key')?.detail).toBe(
      `${bjjFile} loads (public key ${publicKey}; a file on SQLite, not sealed)`,
    );

    // The text form: one line per item, verdict first, then the totals.
    const text = await doctor(['--origin', issuer.url]);
    expect(text.code).toBe(0);
    expect(text.stdout.split('\n').filter((l) => /^(PASS|WARN|FAIL) /.test(l))).toHaveLength(items.length);
    expect(text.stdout).toMatch(/15 pass, 3 warn, 0 fail/);
  });

  it('an empty SCHEMAS_DIR (an image run without its schemas mounted) fails schemas; exit 1', async () => {
    const empty = join(dir, 'no-schemas');
    mkdirSync(empty);
    const run = await doctor(['--json', '--origin', issuer.url], { SCHEMAS_DIR: empty });
    const { items } = JSON.parse(run.stdout) as { items: Line[] };
    expect(items.filter((l) => l.item === 'schemas')).toEqual([
      { item: 'schemas', verdict: 'FAIL', detail: expect.stringContaining(`no schema file in ${empty}`) },
    ]);
    expect(items.some((l) => l.item === 'example schema')).toBe(false);
    expect(run.code).toBe(1);
  });

  it('CONSOLE=on in production is listed: WARN without ADMIN_PORT, PASS naming the admin listener', async () => {
    const lines = async (extra: Record<string, string>) =>
      (JSON.parse((await doctor(['--json', '--origin', issuer.url], extra)).stdout) as { items: Line[] })
        .items;
    expect((await lines({})).some((l) => l.item === 'console')).toBe(false);
    const without = (await lines({ CONSOLE: 'on' })).find((l) => l.item === 'console');
    expect(without).toMatchObject({ verdict: 'WARN', detail: expect.stringMatching(/without ADMIN_PORT/) });
    const listed = await lines({ CONSOLE: 'on', ADMIN_PORT: '9443' });
    expect(listed.find((l) => l.item === 'console')).toMatchObject({
      verdict: 'PASS',
      detail: expect.stringMatching(
        /admin listener 127\.0\.0\.1:9443; sessions end after 1800 s idle or 28800 s/,
      ),
    });
    expect(declaredOrder(listed)).toEqual([...declaredOrder(listed)].sort((a, b) => a - b));
  });

  it('OID4VCI_PROFILE=haip: a FAIL per HAIP requirement not met, naming its setting; a PASS once met', async () => {
    const haipLines = async (extra: Record<string, string>) =>
      (
        JSON.parse(
          (await doctor(['--json', '--origin', issuer.url], { OID4VCI: 'on', ...extra })).stdout,
        ) as {
          items: Line[];
        }
      ).items.filter((l) => l.item === 'haip');
    expect(await haipLines({})).toEqual([]);
    const unmet = await haipLines({ OID4VCI_PROFILE: 'haip' });
    expect(unmet.filter((l) => l.verdict === 'FAIL').map((l) => l.detail)).toEqual([
      expect.stringMatching(/set SD_JWT_ISSUER=x5c/),
      expect.stringMatching(/wallet attestations .* set OID4VCI_WALLET_TRUST/),
      expect.stringMatching(/key attestations .* set OID4VCI_KEY_ATTESTATION_TRUST/),
      expect.stringMatching(/authorization code flow .* set OID4VCI_LOGIN_ISSUER/),
    ]);
    const pem = join(dir, 'not-a-certificate.pem');
    writeFileSync(pem, 'nothing here\n');
    const bad = await haipLines({ OID4VCI_PROFILE: 'haip', OID4VCI_WALLET_TRUST: pem });
    expect(bad.map((l) => l.detail)).toContainEqual(
      expect.stringMatching(/OID4VCI_WALLET_TRUST: .*no PEM certificate/),
    );
    const anchors = (await attester('wallet-provider')).trustFile;
    const met = await haipLines({
      OID4VCI_PROFILE: 'haip',
      SD_JWT_ISSUER: 'x5c',
      OID4VCI_WALLET_TRUST: anchors,
      OID4VCI_KEY_ATTESTATION_TRUST: anchors,
      OID4VCI_LOGIN_ISSUER: 'https://login.example.com',
      OID4VCI_LOGIN_CLIENT_ID: 'issuer',
      OID4VCI_LOGIN_CLIENT_SECRET: 'q8Zr1VfN4yT0c+Lk7wXb2HdM9sJe5uPg3RnA6oYiQ1E=',
    });
    expect(met.map((l) => l.verdict)).toEqual(['PASS']);
  });

  it('OID4VCI=on: a WARN naming OID4VCI_REQUEST_ENCRYPTION_KEY_FILE until credential requests can be encrypted too', async () => {
    const encryptionLines = async (extra: Record<string, string>) =>
      (
        JSON.parse((await doctor(['--json', '--origin', issuer.url], extra)).stdout) as { items: Line[] }
      ).items.filter((l) => l.item === 'oid4vci encryption');
    expect(await encryptionLines({ OID4VCI: 'off' })).toEqual([]);
    expect(await encryptionLines({ OID4VCI: 'on' })).toEqual([
      {
        item: 'oid4vci encryption',
        verdict: 'WARN',
        detail: expect.stringMatching(
          /without credential_request_encryption.*set OID4VCI_REQUEST_ENCRYPTION_KEY_FILE/,
        ),
      },
    ]);
    const keyFile = join(dir, 'request-encryption.pem');
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }));
    expect(await encryptionLines({ OID4VCI: 'on', OID4VCI_REQUEST_ENCRYPTION_KEY_FILE: keyFile })).toEqual([
      { item: 'oid4vci encryption', verdict: 'PASS', detail: expect.stringMatching(/requests \(optional\)/) },
    ]);
  });

  it('without --origin an unreachable ISSUER_ORIGIN fails the documents; NODE_ENV=test fails production', async () => {
    // A port nothing listens on any more.
    const closed = createServer();
    const origin = await listen(closed);
    closed.close();
    await once(closed, 'close');
    const run = await doctor(['--json'], { NODE_ENV: 'test', ISSUER_ORIGIN: origin });
    const { ok, items } = JSON.parse(run.stdout) as { ok: boolean; items: Line[] };
    expect(ok).toBe(false);
    expect(run.code).toBe(1);
    const by = (item: string) => items.find((l) => l.item === item)!;
    expect(by('production')).toMatchObject({ verdict: 'FAIL', detail: 'NODE_ENV=test: not production' });
    expect(by('origin https').verdict).toBe('FAIL');
    expect(by('did.json')).toMatchObject({ verdict: 'FAIL', detail: expect.stringMatching(/ECONNREFUSED/) });
    const allowed = JSON.parse(
      (await doctor(['--json', '--allow-http'], { NODE_ENV: 'test', ISSUER_ORIGIN: origin })).stdout,
    ) as { items: Line[] };
    expect(allowed.items.find((l) => l.item === 'origin https')?.verdict).toBe('WARN');
    // Outside production the example schema is what a development start serves.
    expect(items.some((l) => l.item === 'example schema')).toBe(false);
  });

  it('a broken setup: wrong keys served, unreachable partition, bad claims source, development and loose key files, stuck outbox, bad schema file', async () => {
    // A proxy in front of the issuer that does not forward the status lists.
    const proxy = createServer((req, res) => {
      if (req.url?.startsWith('/statuslist/')) {
        res.writeHead(502).end();
        return;
      }
      const upstream = request(`${issuer.url}${req.url}`, { method: req.method }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      req.pipe(upstream);
    });
    const proxyUrl = await listen(proxy);
    // A key rotated on disk (as a development key) that the running server has not loaded.
    const { created } = await rotateKey(keysDir, 'credential-signing', new Date(), undefined, 'development');
    chmodSync(issuer.ctx.keys.current().partner.file, 0o644);
    claimsAnswer = { status: 500, body: { message: 'down' } };
    await queryStore(
      issuer.ctx.store,
      "UPDATE issuances SET upload_state = 'pending', created_at = '2020-01-01T00:00:00.000Z', next_attempt_at = '2999-01-01T00:00:00.000Z'",
    );
    try {
      const run = await doctor(['--json', '--origin', proxyUrl]);
      const { ok, items } = JSON.parse(run.stdout) as { ok: boolean; items: Line[] };
      expect(run.code).toBe(1);
      expect(ok).toBe(false);
      expect(verdicts(items)).toEqual([
        'PASS production',
        'WARN insecure upstream',
        'PASS origin https',
        'WARN origin fetched',
        'FAIL key files',
        'FAIL development state',
        'PASS database',
        'PASS iden3 key',
        'FAIL did.json',
        'FAIL jwt-vc-issuer',
        'PASS jwks.json',
        'FAIL status list 0',
        'FAIL outbox',
        'PASS webhooks',
        'PASS schemas',
        'FAIL claims staff-v1',
        'WARN example schema',
        'PASS partner JWT',
      ]);
      const by = (item: string) => items.find((l) => l.item === item)!.detail;
      expect(by('key files')).toMatch(/partner-jwt-.*mode 0644/);
      expect(by('development state')).toContain(`credential-signing-${created.kid}.json: a development key`);
      expect(by('did.json')).toContain(`not served ${created.kid}`);
      expect(by('status list 0')).toMatch(/statuslist\/0 answered 502/);
      expect(by('outbox')).toMatch(/1 upload\(s\) pending, the oldest since 2020-01-01/);
      expect(by('claims staff-v1')).toMatch(/answered 500/);

      // A schema file that does not load: one FAIL line per problem, naming the file.
      writeFileSync(join(schemasDir, 'broken.json'), '{ "schemaId": ');
      const schemas = JSON.parse((await doctor(['--json', '--origin', proxyUrl])).stdout) as {
        items: Line[];
      };
      expect(schemas.items.filter((l) => l.item === 'schemas')).toEqual([
        { item: 'schemas', verdict: 'FAIL', detail: expect.stringMatching(/broken\.json: not valid JSON/) },
      ]);
    } finally {
      proxy.close();
    }
  });

  it('a development file left in KEYS_DIR: the advice is to move it aside, not to chmod it', async () => {
    const devFile = join(keysDir, 'dev-emulator.json');
    writeFileSync(devFile, JSON.stringify({ url: 'http://127.0.0.1:1/v1' }), { mode: 0o644 });
    chmodSync(devFile, 0o644);
    try {
      const run = await doctor(['--json', '--origin', issuer.url]);
      const { items } = JSON.parse(run.stdout) as { items: Line[] };
      expect(run.code).toBe(1);
      const line = items.find((l) => l.item === 'key files' && l.detail.includes('dev-emulator.json'));
      expect(line).toMatchObject({ verdict: 'FAIL', detail: expect.stringMatching(/move it out of /) });
      expect(line?.detail).not.toMatch(/chmod/);
    } finally {
      rmSync(devFile);
    }
  });

  it('REDIS_URL set: a redis item; PASS naming the rate-limit prefix when Redis answers, FAIL when unreachable', async () => {
    const closed = createServer();
    const closedUrl = await listen(closed);
    closed.close();
    await once(closed, 'close');
    const unreachable = `redis://${new URL(closedUrl).host}`;
    const down = await doctor(['--json', '--origin', issuer.url], { REDIS_URL: unreachable });
    expect(down.code).toBe(1);
    const downItems = (JSON.parse(down.stdout) as { items: Line[] }).items;
    expect(downItems.filter((l) => l.item === 'redis').map((l) => l.verdict)).toEqual(['FAIL']);
    // Reported right after the database.
    const names = downItems.map((l) => l.item);
    expect(names.indexOf('redis')).toBe(names.indexOf('database') + 1);

    if (!(await redisAvailable('doctor redis item'))) return;
    const up = await doctor(['--json', '--origin', issuer.url], {
      REDIS_URL: TEST_REDIS_URL,
      RATE_LIMIT_REDIS_PREFIX: 'doctor-test:',
    });
    const upItems = (JSON.parse(up.stdout) as { items: Line[] }).items;
    expect(upItems.filter((l) => l.item === 'redis')).toEqual([
      { item: 'redis', verdict: 'PASS', detail: expect.stringMatching(/doctor-test:<group>:/) },
    ]);
    // Without REDIS_URL there is no redis item.
    const without = JSON.parse((await doctor(['--json', '--origin', issuer.url])).stdout) as {
      items: Line[];
    };
    expect(without.items.some((l) => l.item === 'redis')).toBe(false);
  });

  it('failed uploads: a second FAIL outbox line with the count and the retry command; gone once retried', async () => {
    await queryStore(
      issuer.ctx.store,
      "UPDATE issuances SET upload_state = 'failed', next_attempt_at = NULL, created_at = ?, last_error = 'hosting service answered 400'",
      [new Date().toISOString()],
    );
    const outboxLines = async () =>
      (
        JSON.parse((await doctor(['--json', '--origin', issuer.url])).stdout) as { items: Line[] }
      ).items.filter((l) => l.item === 'outbox');
    expect(await outboxLines()).toEqual([
      { item: 'outbox', verdict: 'PASS', detail: 'no upload pending' },
      {
        item: 'outbox',
        verdict: 'FAIL',
        detail: expect.stringMatching(/^1 upload\(s\) failed .*npm run admin -- uploads retry --all-failed$/),
      },
    ]);

    // The command doctor names puts it back in the queue; the hosting service takes it.
    const uploaded = once(issuer.ctx.outbox, 'uploaded');
    const retry = ['--url', issuer.url, 'uploads', 'retry', '--all-failed'];
    expect((await runCli(retry, env, dir)).code).toBe(0);
    await uploaded;
    expect(await outboxLines()).toEqual([{ item: 'outbox', verdict: 'PASS', detail: 'no upload pending' }]);
  });

  it('failed webhook deliveries: FAIL webhooks naming the CLI commands, which list and retry them', async () => {
    const webhookLines = async () =>
      (
        JSON.parse((await doctor(['--json', '--origin', issuer.url])).stdout) as { items: Line[] }
      ).items.filter((l) => l.item === 'webhooks');
    const cli = (args: string[]) => runCli(['--url', issuer.url, '--json', ...args], env, dir);
    // A receiver that is not there: the first attempt fails.
    const added = await cli([
      'webhooks',
      'add',
      'https://127.0.0.1:1/hooks',
      '--events',
      'credential.issued',
    ]);
    expect(added.code).toBe(0);
    const { id } = JSON.parse(added.stdout) as { id: string };
    const failedOnce = once(issuer.ctx.webhooks, 'failed');
    expect(
      (
        await issuer.admin('/admin/issue-vc', {
          userId: 'doctor.hook@example.org',
          schemaId: 'membership-v1',
          vct: 'urn:vct:membership',
          expiration: new Date(Date.now() + 86400_000).toISOString(),
          credentialSubject: {
            givenName: 'A',
            familyName: 'B',
            memberSince: '2020-01-01',
            tier: 'gold',
            memberNumber: 2,
          },
        })
      ).status,
    ).toBe(201);
    await failedOnce;
    // As if WEBHOOK_MAX_ATTEMPTS had passed.
    await queryStore(
      issuer.ctx.store,
      "UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL",
    );
    expect(await webhookLines()).toEqual([
      {
        item: 'webhooks',
        verdict: 'FAIL',
        detail: expect.stringMatching(
          /^1 delivery\(ies\) failed .*npm run admin -- webhooks retry-failed <id> .*webhooks retry <deliveryId>$/,
        ),
      },
    ]);

    const listed = await cli(['webhooks', 'deliveries', id, '--status', 'failed']);
    const { deliveries } = JSON.parse(listed.stdout) as { deliveries: Array<{ id: string; type: string }> };
    expect(deliveries).toMatchObject([{ type: 'credential.issued' }]);
    expect((await cli(['webhooks', 'retry', deliveries[0]!.id])).code).toBe(0);
    expect((await webhookLines())[0]).toMatchObject({ verdict: 'PASS' });
    expect((await cli(['webhooks', 'remove', id])).code).toBe(0);
    expect(JSON.parse((await cli(['webhooks', 'list'])).stdout)).toEqual({ webhooks: [] });
  });

  it('a configuration that does not load: one FAIL line per problem', async () => {
    const run = await doctor([], { PARTNER_ID: '', API_KEY: 'short' });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^FAIL {2}config {2}API_KEY: must be at least 32 characters in production$/m);
  });

  it('a KEY_ENCRYPTION_KEY that protects nothing (the development key, all zeros) fails', async () => {
    for (const value of [DEVELOPMENT_KEY_ENCRYPTION_KEY.toString('hex'), '00'.repeat(32)]) {
      const run = await doctor(['--json', '--origin', issuer.url], { KEY_ENCRYPTION_KEY: value });
      expect(run.code).toBe(1);
      const { items } = JSON.parse(run.stdout) as { items: Line[] };
      expect(items).toContainEqual({
        item: 'config',
        verdict: 'FAIL',
        detail: expect.stringMatching(/^KEY_ENCRYPTION_KEY: /),
      });
    }
  });

  it('a schema declaring renewal without KEY_ENCRYPTION_KEY in production: WARN naming the schema and the fix', async () => {
    const renewingDir = join(dir, 'schemas-renewing');
    cpSync(resolve('schemas'), renewingDir, { recursive: true });
    writeFileSync(
      join(renewingDir, 'yearly-v1.json'),
      JSON.stringify({
        schemaId: 'yearly-v1',
        proofTypes: ['SD_JWT_VC'],
        expiresInSeconds: 31_536_000,
        credentialSubject: { type: 'object', properties: { name: { type: 'string' } } },
        claims: { provider: 'sqlite' },
        sdJwt: { vct: 'urn:vct:yearly' },
        renewal: { beforeExpirySeconds: 2_592_000 },
      }),
    );
    const renewalLines = async (extra: Record<string, string>) => {
      const run = await doctor(['--json', '--origin', issuer.url], { SCHEMAS_DIR: renewingDir, ...extra });
      return (JSON.parse(run.stdout) as { items: Line[] }).items.filter((l) => l.item === 'renewal');
    };
    const unset = await renewalLines({});
    expect(unset).toEqual([
      {
        item: 'renewal',
        verdict: 'WARN',
        detail: expect.stringMatching(/^yearly-v1 declare\(s\) renewal, but KEY_ENCRYPTION_KEY is unset: /),
      },
    ]);
    expect(unset[0]!.detail).toContain('none of their credentials can be renewed');
    expect(unset[0]!.detail).toContain('set KEY_ENCRYPTION_KEY (openssl rand -hex 32)');
    const key = Buffer.from(Array.from({ length: 32 }, (_, n) => n * 5 + 1)).toString('hex');
    expect(await renewalLines({ KEY_ENCRYPTION_KEY: key })).toEqual([
      {
        item: 'renewal',
        verdict: 'PASS',
        detail: 'yearly-v1 renew(s) direct credentials; recipient emails are sealed under KEY_ENCRYPTION_KEY',
      },
    ]);
    // No schema declares renewal (the bundled ones): no renewal line at all.
    expect(await renewalLines({ SCHEMAS_DIR: resolve('schemas') })).toEqual([]);
  });

  it('a database file group or others may read fails the database item, naming the file and chmod', async () => {
    const file = join(dir, 'issuer.db');
    chmodSync(file, 0o644);
    try {
      const { items } = JSON.parse((await doctor(['--json', '--origin', issuer.url])).stdout) as {
        items: Line[];
      };
      const line = items.find((l) => l.item === 'database');
      expect(line).toMatchObject({ verdict: 'FAIL', detail: expect.stringContaining(`chmod 600 ${file}`) });
    } finally {
      chmodSync(file, 0o600);
    }
  });
});
