import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { holderKey, openid4vciWallet } from '../../test/helpers/oid4vci-wallet.js';
import { tempDir } from '../../test/helpers/tmp.js';
import type { Row } from './issuance.js';
import { processCpuMs, startBenchServer } from './server.js';

/**
 * The OpenID4VCI credential endpoint beside the hosted `POST /issue-vc`, on one server in one run
 * (docs/benchmarks.md "The OpenID4VCI channel"): server CPU per credential of each, and their ratio.
 * Both sign one SD-JWT VC with the same key and record it; the hosted one also seals and uploads it
 * (to the bundled emulator, in the same process), the OpenID4VCI one checks a proof JWT and a
 * nonce instead. The wallet's earlier steps (offer, token, nonce) are made before the measured
 * window and reported apart, as the whole flow's CPU per credential. The same schema is also issued
 * as an ISO mdoc (`MSO_MDOC`, its configuration `membership-v1.mdoc`): the credential endpoint's
 * CPU per mdoc beside the SD-JWT VC's, measured alike in the same run, and their ratio.
 */

const PRE_AUTH = 'urn:ietf:params:oauth:grant-type:pre-authorized_code';

/** A free loopback port: the metadata's URLs must name the port the server listens on. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Runs `jobs` with `concurrency` in flight; resolves when all are done. */
export async function inFlight<T>(
  items: T[],
  concurrency: number,
  job: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await job(items[next++]!);
    }),
  );
}

export async function benchOid4vci(
  options: { credentials?: number; concurrency?: number } = {},
): Promise<Row[]> {
  const n = options.credentials ?? 300;
  const concurrency = options.concurrency ?? 16;
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const server = await startBenchServer({
    SCHEMAS_DIR: withMdoc(tempDir()),
    PORT: String(port),
    ISSUER_ORIGIN: origin,
    OID4VCI: 'on',
    RATE_LIMIT_HOLDER_PER_MIN: '0',
    RATE_LIMIT_ADMIN_PER_MIN: '0',
    RATE_LIMIT_PUBLIC_PER_MIN: '0',
  });
  const cpu = () => processCpuMs(server.child.pid!) ?? Number.NaN;
  try {
    // Hosted issue-vc, the baseline.
    const holder = generateHolderKeyPair('x25519');
    let counter = 0;
    let hostedFailures = 0;
    const hosted = async () => {
      const res = await fetch(`${origin}/issue-vc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': server.apiKey },
        body: JSON.stringify({
          holderDID: `did:example:oid4vci-bench-${counter++}`,
          pubKey: holder.publicKeyHex,
          userId: 'demo-user-1',
          schemaId: 'membership-v1',
        }),
      });
      await res.arrayBuffer();
      if (res.status !== 201) hostedFailures++;
    };
    await inFlight(Array.from({ length: 50 }), concurrency, hosted);
    hostedFailures = 0;
    const h0 = cpu();
    const hStart = performance.now();
    await inFlight(Array.from({ length: n }), concurrency, hosted);
    const hostedSeconds = (performance.now() - hStart) / 1000;
    const hostedCpu = (cpu() - h0) / n;

    // OpenID4VCI: every wallet step before the window but the credential request itself.
    const key = holderKey();
    const wallet = openid4vciWallet([key]);
    const metadata = await wallet.resolveIssuerMetadata(origin);
    type Prepared = { accessToken: string; jwt: string; configurationId: string };
    const prepareFor = (configurationId: string, into: Prepared[]) => async () => {
      const res = await fetch(`${origin}/admin/credential-offers`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-admin-api-key': server.adminApiKey },
        body: JSON.stringify({
          schemaId: 'membership-v1',
          userId: 'demo-user-1',
          ...(configurationId === MDOC_CONFIGURATION ? { proofType: 'MSO_MDOC' } : {}),
        }),
      });
      const { credentialOffer } = (await res.json()) as {
        credentialOffer: { grants: Record<string, { 'pre-authorized_code': string }> };
      };
      const token = await fetch(`${origin}/oid4vci/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: PRE_AUTH,
          'pre-authorized_code': credentialOffer.grants[PRE_AUTH]!['pre-authorized_code'],
        }).toString(),
      });
      const { access_token } = (await token.json()) as { access_token: string };
      const { c_nonce } = await wallet.requestNonce({ issuerMetadata: metadata });
      const { jwt } = await wallet.createCredentialRequestJwtProof({
        issuerMetadata: metadata,
        signer: key.signer,
        nonce: c_nonce,
        credentialConfigurationId: configurationId,
      });
      into.push({ accessToken: access_token, jwt, configurationId });
    };
    const prepared: Prepared[] = [];
    const f0 = cpu();
    await inFlight(Array.from({ length: n + 50 }), concurrency, prepareFor('membership-v1', prepared));
    const prepCpu = (cpu() - f0) / (n + 50);
    let oid4vciFailures = 0;
    const credential = async (p: Prepared) => {
      const res = await fetch(`${origin}/oid4vci/credential`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${p.accessToken}` },
        body: JSON.stringify({ credential_configuration_id: p.configurationId, proofs: { jwt: [p.jwt] } }),
      });
      await res.arrayBuffer();
      if (res.status !== 200) oid4vciFailures++;
    };
    await inFlight(prepared.slice(0, 50), concurrency, credential);
    oid4vciFailures = 0;
    const c0 = cpu();
    const cStart = performance.now();
    await inFlight(prepared.slice(50), concurrency, credential);
    const oid4vciSeconds = (performance.now() - cStart) / 1000;
    const credentialCpu = (cpu() - c0) / n;

    // The same credential endpoint issuing ISO mdocs: prepared alike, measured alike.
    const mdocPrepared: Prepared[] = [];
    await inFlight(Array.from({ length: n + 50 }), concurrency, prepareFor(MDOC_CONFIGURATION, mdocPrepared));
    await inFlight(mdocPrepared.slice(0, 50), concurrency, credential);
    const mdocWarmFailures = oid4vciFailures;
    const m0 = cpu();
    await inFlight(mdocPrepared.slice(50), concurrency, credential);
    const mdocCpu = (cpu() - m0) / n;
    const mdocFailures = oid4vciFailures - mdocWarmFailures;
    oid4vciFailures = mdocWarmFailures;

    // Batches of ten (OpenID4VCI 1.0 §8): one offer, token, nonce and request for ten credentials,
    // the whole flow in the window.
    const batches = Math.max(1, Math.floor(n / 10));
    const batchKeys = Array.from({ length: 10 }, () => holderKey());
    const batchWallet = openid4vciWallet(batchKeys);
    let batchFailures = 0;
    const batch = async () => {
      const res = await fetch(`${origin}/admin/credential-offers`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-admin-api-key': server.adminApiKey },
        body: JSON.stringify({ schemaId: 'membership-v1', userId: 'demo-user-1' }),
      });
      const { credentialOffer } = (await res.json()) as {
        credentialOffer: { grants: Record<string, { 'pre-authorized_code': string }> };
      };
      const token = await fetch(`${origin}/oid4vci/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: PRE_AUTH,
          'pre-authorized_code': credentialOffer.grants[PRE_AUTH]!['pre-authorized_code'],
        }).toString(),
      });
      const { access_token } = (await token.json()) as { access_token: string };
      const { c_nonce } = await batchWallet.requestNonce({ issuerMetadata: metadata });
      const jwts: string[] = [];
      for (const k of batchKeys)
        jwts.push(
          (
            await batchWallet.createCredentialRequestJwtProof({
              issuerMetadata: metadata,
              signer: k.signer,
              nonce: c_nonce,
              credentialConfigurationId: 'membership-v1',
            })
          ).jwt,
        );
      const answer = await fetch(`${origin}/oid4vci/credential`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${access_token}` },
        body: JSON.stringify({ credential_configuration_id: 'membership-v1', proofs: { jwt: jwts } }),
      });
      await answer.arrayBuffer();
      if (answer.status !== 200) batchFailures++;
    };
    await inFlight(Array.from({ length: 3 }), concurrency, batch);
    batchFailures = 0;
    const b0 = cpu();
    await inFlight(Array.from({ length: batches }), Math.min(concurrency, 4), batch);
    const batchCpu = (cpu() - b0) / (batches * 10);
    return [
      { name: 'hosted issue-vc server CPU', value: hostedCpu, unit: 'ms/credential' },
      { name: 'hosted issue-vc rate', value: n / hostedSeconds, unit: '/s' },
      { name: 'hosted issue-vc non-201 answers', value: hostedFailures, unit: '' },
      { name: 'oid4vci credential endpoint server CPU', value: credentialCpu, unit: 'ms/credential' },
      { name: 'oid4vci credential endpoint rate', value: n / oid4vciSeconds, unit: '/s' },
      { name: 'oid4vci credential non-200 answers', value: oid4vciFailures, unit: '' },
      { name: 'oid4vci offer+token+nonce server CPU', value: prepCpu, unit: 'ms/credential' },
      {
        name: 'oid4vci whole flow server CPU',
        value: prepCpu + credentialCpu,
        unit: 'ms/credential',
      },
      {
        name: 'oid4vci credential endpoint / hosted CPU',
        value: credentialCpu / hostedCpu,
        unit: '× (goal ≤ 1.3)',
      },
      { name: 'oid4vci mdoc credential endpoint server CPU', value: mdocCpu, unit: 'ms/credential' },
      { name: 'oid4vci mdoc credential non-200 answers', value: mdocFailures, unit: '' },
      {
        name: 'oid4vci mdoc / SD-JWT VC credential endpoint CPU',
        value: mdocCpu / credentialCpu,
        unit: '× (goal ≤ 1.5)',
      },
      { name: 'oid4vci batch of 10 whole flow server CPU', value: batchCpu, unit: 'ms/credential' },
      { name: 'oid4vci batch non-200 answers', value: batchFailures, unit: '' },
      {
        name: 'oid4vci batch of 10 / 10 single issuances (whole flow CPU)',
        value: batchCpu / (prepCpu + credentialCpu),
        unit: '× (goal ≤ 0.6)',
      },
    ];
  } finally {
    await server.close();
  }
}

const MDOC_CONFIGURATION = 'membership-v1.mdoc';

/** The repository's schemas with membership-v1 also issued as an ISO mdoc (docs/schemas-and-claims.md "ISO mdoc"). */
function withMdoc(dir: string): string {
  const schemas = join(dir, 'schemas');
  cpSync('schemas', schemas, { recursive: true });
  const schema = JSON.parse(readFileSync('schemas/membership-v1.json', 'utf8'));
  schema.proofTypes = [...new Set([...schema.proofTypes, 'MSO_MDOC'])];
  schema.mdoc = { docType: 'org.example.membership.1' };
  writeFileSync(join(schemas, 'membership-v1.json'), JSON.stringify(schema));
  return schemas;
}
