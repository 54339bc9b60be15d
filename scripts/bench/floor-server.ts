/**
 * The floor for the hosted benchmark: the least any issuer can do per hosted issuance
 * with the parts this kit must use, and nothing else. node:http in, one claims lookup and one
 * upload through undici, one ES256 signature and one seal (the ceiling's two primitives), the
 * API key compared in constant time, two SQLite writes (the record holding the envelope, then its
 * "uploaded" mark); no framework, validation, dedupe, status slot, logging or metrics.
 * `scripts/bench/hosted.ts` runs it in place of `src/main.ts`, in the same three-process shape,
 * so the kit's figure can be read against what its parts alone cost. Not a server to run: it
 * checks nothing a real issuer must.
 *
 * `FLOOR_WITH` (comma-separated) puts one of the kit's own layers back, to measure what each adds:
 * `express` (Express with the kit's JSON body parser), `sdjwt` (the kit's SD-JWT VC assembly with
 * its disclosures, in place of the bare JWT), `store` (the kit's SQLite store: dedupe lookup,
 * status slot, the issuance record, the "uploaded" mark, in place of the one-table insert).
 */
import { randomUUID, sign, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import express from 'express';
import { Pool } from 'undici';
import { loadOrCreateDevSecrets } from '../../src/development/dev-secrets.js';
import { type HolderPublicKey, parseHolderPublicKey, sealEnvelope } from '../../src/envelope/index.js';
import { issueSdJwtVc } from '../../src/formats/sd-jwt-vc/assemble.js';
import { jsonBody } from '../../src/http/middleware/json-body.js';
import { issuanceSubjectHash, randomRevocationNonce } from '../../src/issuance/issuance-identity.js';
import { loadKeyRing } from '../../src/keys/key-ring.js';
import { PartnerJwtSigner } from '../../src/service-client/partner-jwt.js';
import { openSqlite } from '../../src/store/sqlite/database.js';
import { sqliteStoreOn } from '../../src/store/sqlite/index.js';

const env = process.env;
const layers = new Set((env.FLOOR_WITH ?? '').split(',').filter(Boolean));
const keysDir = env.KEYS_DIR!;
const ring = await loadKeyRing(keysDir, { generateIfMissing: true });
const apiKey = Buffer.from(loadOrCreateDevSecrets(keysDir).secrets.apiKey);
const schema = JSON.parse(readFileSync(join(env.SCHEMAS_DIR!, 'membership-v1.json'), 'utf8')) as {
  claims: { url: string };
};
const claimsUrl = new URL(schema.claims.url);
const uploadUrl = new URL(`${env.SERVICE_V1_BASE_URL}/dstorage/vcs`);
const claimsPool = new Pool(claimsUrl.origin, { connections: 64 });
const uploadPool = new Pool(uploadUrl.origin, { connections: 64 });
const partnerJwt = new PartnerJwtSigner({
  identity: { origin: 'http://127.0.0.1' },
  partnerId: 'bench-floor',
  key: () => ring.partnerKeys[0]!,
});

// Not the kit's schema: one table, the credential id as key, the envelope as text.
const db = openSqlite(env.DATABASE_URL!.replace(/^sqlite:/, ''), { migrate: layers.has('store') });
const kitStore = layers.has('store') ? sqliteStoreOn(db).issuances : undefined;
db.exec(
  'CREATE TABLE IF NOT EXISTS floor (id TEXT PRIMARY KEY, holder TEXT, envelope TEXT, uploaded INTEGER NOT NULL DEFAULT 0)',
);
const insert = db.prepare('INSERT INTO floor (id, holder, envelope) VALUES (?, ?, ?)');
// An issuer must know what was stored upstream (to resume the rest after a restart): a second write.
const markUploaded = db.prepare('UPDATE floor SET uploaded = 1 WHERE id = ?');
const record = db.transaction((id: string, holder: string, envelope: string) =>
  insert.run(id, holder, envelope),
);
const signingKey = ring.signing.privateKey!;

const b64url = (s: string) => Buffer.from(s).toString('base64url');

async function postJson(pool: Pool, path: string, body: string, headers: Record<string, string>) {
  const res = await pool.request({
    path,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await res.body.text();
  if (res.statusCode >= 300) throw new Error(`${path}: ${res.statusCode} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

async function issue(body: { holderDID: string; pubKey: string; userId: string }): Promise<void> {
  const claims = await postJson(claimsPool, claimsUrl.pathname, JSON.stringify({ userId: body.userId }), {});
  const now = Math.floor(Date.now() / 1000);
  const id = randomUUID();
  const subject = (claims.credentialSubject ?? {}) as Record<string, unknown>;
  const fields = { iss: 'http://127.0.0.1', sub: body.holderDID, iat: now, jti: id, ...subject };
  let credential: string;
  if (layers.has('sdjwt')) {
    credential = await issueSdJwtVc(
      fields,
      { _sd: Object.keys(subject) },
      {
        header: { kid: ring.signing.kid },
        sign: ring.signing.sign,
      },
    );
  } else {
    const header = b64url(JSON.stringify({ alg: 'ES256', typ: 'dc+sd-jwt' }));
    const payload = b64url(JSON.stringify(fields));
    const signature = sign('sha256', Buffer.from(`${header}.${payload}`), {
      key: signingKey,
      dsaEncoding: 'ieee-p1363',
    }).toString('base64url');
    credential = `${header}.${payload}.${signature}~`;
  }
  const holderKey = parseHolderPublicKey(body.pubKey, 'pubKey');
  const sealed = sealEnvelope(holderKey, credential);
  const expiresAt = new Date((now + 86_400) * 1000).toISOString();
  const envelope = JSON.stringify({
    holderDid: body.holderDID,
    schemaId: 'membership-v1',
    expiresAt,
    ...sealed,
    externalId: id,
    proofType: 'SD_JWT_VC',
  });
  if (kitStore) await recordInKitStore(id, body.holderDID, subject, holderKey, now, envelope);
  else record(id, body.holderDID, envelope);
  await postJson(uploadPool, uploadUrl.pathname, envelope, {
    'x-partner-auth': await partnerJwt.token(),
    'idempotency-key': id,
  });
  if (kitStore) await kitStore.markUploaded(id, `/vcs/${id}`, new Date());
  else markUploaded.run(id);
}

/** The kit's store work for one hosted issuance (issuance-core.ts signAndRecord, in order). */
async function recordInKitStore(
  id: string,
  holderDid: string,
  subject: Record<string, unknown>,
  holderKey: HolderPublicKey,
  now: number,
  envelope: string,
): Promise<void> {
  const store = kitStore!;
  const createdAt = new Date(now * 1000);
  const expiresAt = new Date((now + 86_400) * 1000);
  const subjectHash = await issuanceSubjectHash(subject, undefined, holderKey);
  const key = { holderDid, schemaId: 'membership-v1', proofType: 'SD_JWT_VC' as const, subjectHash };
  await store.findLiveDuplicate({ ...key, now: createdAt });
  for (;;) {
    const statusSlot = await store.proposeStatusSlot(131_072, 1);
    const outcome = await store.insertIssuance(
      {
        ...key,
        credentialId: id,
        channel: 'hosted',
        userId: 'bench',
        revocationNonce: randomRevocationNonce(),
        statusSlot,
        kid: ring.signing.kid,
        createdAt,
        expiresAt,
        uploadDueAt: new Date(Date.now() + 60_000),
        envelope: JSON.parse(envelope),
      },
      { dedupe: true },
    );
    if (outcome.kind === 'inserted' || outcome.kind === 'duplicate') return;
  }
}

function answer(req: IncomingMessage, res: ServerResponse, body: unknown): void {
  const key = Buffer.from(String(req.headers['x-api-key'] ?? ''));
  if (key.length !== apiKey.length || !timingSafeEqual(key, apiKey)) {
    res.writeHead(403).end();
    return;
  }
  issue(body as Parameters<typeof issue>[0]).then(
    () => res.writeHead(201).end(),
    (err: Error) => res.writeHead(502, { 'content-type': 'text/plain' }).end(err.message),
  );
}

let handler: (req: IncomingMessage, res: ServerResponse) => void;
if (layers.has('express')) {
  const app = express();
  app.post('/issue-vc', jsonBody(), (req, res) => answer(req, res, req.body));
  handler = app;
} else {
  handler = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => answer(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8'))));
  };
}
const server = createServer(handler);
server.keepAliveTimeout = 60_000;
server.listen(Number(env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`floor issuer listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
