import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { type Agent, request } from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { generateHolderKeyPair, parseHolderPublicKey, sealEnvelope } from '../../src/envelope/index.js';
import { loadSchemas } from '../../src/formats/schema-file.js';
import { SdJwtVcIssuer } from '../../src/formats/sd-jwt-vc/sd-jwt-vc-issuer.js';
import { IssuerIdentification } from '../../src/identity/issuer-identification.js';
import { IssuerUrls } from '../../src/identity/issuer-identity.js';
import { loadKeyRing } from '../../src/keys/key-ring.js';
import { tempDir } from '../../test/helpers/tmp.js';
import { processCpuMs, startBenchServer } from './server.js';

export type Row = { name: string; value: number; unit: string };

/** Calls fn repeatedly for about `ms` and returns operations per second. */
async function rate(ms: number, fn: () => unknown | Promise<unknown>): Promise<number> {
  for (let i = 0; i < 50; i++) await fn(); // warm-up
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < ms) {
    for (let i = 0; i < 50; i++) await fn();
    n += 50;
  }
  return (n * 1000) / (performance.now() - start);
}

const CLAIMS = {
  givenName: 'Alice',
  familyName: 'Martin',
  memberSince: '2021-04-12',
  tier: 'gold',
  memberNumber: 1042,
};

/** In-process: the raw primitive and each stage of an issuance, in the same run. */
export async function benchPrimitives(): Promise<Row[]> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const data = Buffer.from('eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJodHRwczovL2lzc3Vlci5leGFtcGxlIn0');
  const es256 = await rate(1500, () => sign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' }));

  const dir = tempDir();
  const ring = await loadKeyRing(join(dir, 'keys'), { generateIfMissing: true });
  const schema = loadSchemas(
    join(process.cwd(), 'schemas'),
    new IssuerUrls('https://issuer.example'),
  ).require('membership-v1');
  const issuer = new SdJwtVcIssuer({
    identification: new IssuerIdentification('url', 'https://issuer.example'),
    keys: { current: () => ring },
  });
  const now = new Date();
  const expiresAt = new Date(now.getTime() + 3600_000);
  const input = {
    holderDid: 'did:example:bench',
    schema,
    claims: CLAIMS,
    issuedAt: now,
    expiresAt,
    revocationNonce: 1,
    status: { idx: 1, uri: 'https://issuer.example/statuslist/0' },
  };
  const sdjwt = await rate(1500, () => issuer.issue({ ...input, credentialId: randomUUID() }));
  const holder = parseHolderPublicKey(generateHolderKeyPair('x25519').publicKeyHex, 'pubKey');
  const sample = (await issuer.issue({ ...input, credentialId: randomUUID() })).credential;
  const seal = await rate(1500, () => sealEnvelope(holder, sample));
  // The crypto of one credential and nothing else: what a core could issue if the server cost nothing.
  const ceiling = 1000 / (1000 / es256 + 1000 / seal);
  return [
    { name: 'ceiling: bare ES256 sign + one seal', value: ceiling, unit: 'credentials/s' },
    { name: 'ceiling cost per credential', value: 1000 / ceiling, unit: 'ms' },
    { name: 'bare ES256 signs/s (node:crypto)', value: es256, unit: '/s' },
    { name: 'SD-JWT VC issues/s (in-process)', value: sdjwt, unit: '/s' },
    { name: 'envelope seals/s (X25519)', value: seal, unit: '/s' },
  ];
}

export function postJson(
  agent: Agent,
  url: URL,
  body: string,
  headers: Record<string, string>,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...headers,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * Over HTTP: the real server in a child process (with the bundled emulator, its own server in the same process), issue-vc at
 * `concurrency` in flight, each for a new holder so every request signs a new credential.
 */
export async function benchHttpIssueVc(
  options: { seconds?: number; concurrency?: number } = {},
): Promise<Row[]> {
  const seconds = options.seconds ?? 8;
  const concurrency = options.concurrency ?? 32;
  const server = await startBenchServer({ RATE_LIMIT_HOLDER_PER_MIN: '0' });
  const { url, apiKey } = server;
  try {
    const holder = generateHolderKeyPair('x25519');
    const latencies: number[] = [];
    let failures = 0;
    let counter = 0;
    const one = async () => {
      const t0 = performance.now();
      const res = await fetch(`${url}/issue-vc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
        body: JSON.stringify({
          holderDID: `did:example:bench-${counter++}`,
          pubKey: holder.publicKeyHex,
          userId: 'demo-user-1',
          schemaId: 'membership-v1',
        }),
      });
      await res.arrayBuffer();
      if (res.status !== 201) failures++;
      return performance.now() - t0;
    };
    // Warm-up, then the measured window.
    const warmEnd = performance.now() + 1500;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < warmEnd) await one();
      }),
    );
    failures = 0;
    const cpu0 = processCpuMs(server.child.pid!);
    const start = performance.now();
    const end = start + seconds * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < end) latencies.push(await one());
      }),
    );
    const elapsed = (performance.now() - start) / 1000;
    const cpu1 = processCpuMs(server.child.pid!);
    latencies.sort((a, b) => a - b);
    const cpuRows: Row[] =
      cpu0 === undefined || cpu1 === undefined
        ? []
        : [
            {
              name: 'issue-vc server CPU (issuer + bundled emulator)',
              value: (cpu1 - cpu0) / latencies.length,
              unit: 'ms/request',
            },
          ];
    return [
      {
        name: `issue-vc over HTTP at ${concurrency} in flight`,
        value: latencies.length / elapsed,
        unit: '/s',
      },
      { name: 'issue-vc p50 latency', value: percentile(latencies, 50), unit: 'ms' },
      { name: 'issue-vc p99 latency', value: percentile(latencies, 99), unit: 'ms' },
      { name: 'issue-vc non-201 answers', value: failures, unit: '' },
      ...cpuRows,
    ];
  } finally {
    await server.close();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const row of [...(await benchPrimitives()), ...(await benchHttpIssueVc())]) console.log(row);
}
