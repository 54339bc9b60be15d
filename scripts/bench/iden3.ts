import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { PrivateKey } from '@iden3/js-crypto';
import { BjjSigner } from '../../src/issuers/iden3/bjj-signer.js';
import { Iden3BjjIssuer } from '../../src/issuers/iden3/iden3-bjj-issuer.js';
import type { IssueInput } from '../../src/issuers/issuer.js';
import { type CredentialSchema, SchemaFileSchema } from '../../src/schemas/schema-file.js';
import { openSqlite } from '../../src/store/sqlite/database.js';

type Row = { name: string; value: number; unit: string };

const SCHEMAS_DIR = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../schemas');
const SIGN_SECONDS = 2;
const REFERENCE_SIGN_SECONDS = 2;
const REVOCATIONS = 300;
const ISSUES = 60;
const WARMUP = 5;

const round = (value: number, digits: number) => Number(value.toFixed(digits));

function randomFieldElement(): bigint {
  // 31 random bytes: always below the BN254 field order.
  return BigInt(`0x${randomBytes(31).toString('hex')}`);
}

/** Signatures per second over a fixed time, messages drawn beforehand. */
function signsPerSecond(sign: (msg: bigint) => unknown, seconds: number): number {
  const messages = Array.from({ length: 64 }, randomFieldElement);
  let n = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < seconds * 1000) {
    sign(messages[n % messages.length]!);
    n++;
    elapsed = performance.now() - start;
  }
  return n / (elapsed / 1000);
}

function membershipSchema(): CredentialSchema {
  const file = join(SCHEMAS_DIR, 'membership-v1.json');
  return { ...SchemaFileSchema.parse(JSON.parse(readFileSync(file, 'utf8'))), file };
}

/**
 * DESIGN §11 figures for the Iden3 back-end, in process: BabyJubJub EdDSA-Poseidon signatures per
 * second (ours on @noble/curves vs @iden3/js-crypto), revocations per second (tree insert + new
 * state, committed to a WAL SQLite file), and issue() per second with its time split.
 */
export async function benchIden3(): Promise<Row[]> {
  const sk = randomBytes(32);
  const ours = new BjjSigner(sk);
  ours.sign(1n); // builds the Base8 table outside the timed loop
  const oursRate = signsPerSecond((m) => ours.sign(m), SIGN_SECONDS);
  const reference = new PrivateKey(Uint8Array.from(sk));
  const referenceRate = signsPerSecond((m) => reference.signPoseidon(m), REFERENCE_SIGN_SECONDS);

  const dir = mkdtempSync(join(tmpdir(), 'bench-iden3-'));
  try {
    const db = openSqlite(join(dir, 'bench.db'));
    const issuer = await Iden3BjjIssuer.open({
      db,
      keysDir: join(dir, 'keys'),
      generateKeyIfMissing: true,
      origin: 'https://issuer.example',
      schemasDir: SCHEMAS_DIR,
    });

    const nonces = Array.from({ length: REVOCATIONS }, () => randomInt(1, 2 ** 47));
    let start = performance.now();
    for (const nonce of nonces) await issuer.revoke(nonce);
    const revokeRate = REVOCATIONS / ((performance.now() - start) / 1000);

    const schema = membershipSchema();
    const holderDid = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK';
    const input = (): IssueInput => ({
      credentialId: randomUUID(),
      holderDid,
      schema,
      claims: {
        givenName: 'Ada',
        familyName: 'Lovelace',
        email: 'ada@example.org',
        memberSince: '2019-03-01',
        tier: 'gold',
        memberNumber: randomInt(1, 1_000_000),
      },
      issuedAt: new Date(),
      expiresAt: new Date(Date.now() + 365 * 86_400_000),
      revocationNonce: randomInt(1, 2 ** 47),
    });
    for (let i = 0; i < WARMUP; i++) await issuer.issue(input());
    let merklize = 0;
    let sign = 0;
    let total = 0;
    start = performance.now();
    for (let i = 0; i < ISSUES; i++) {
      const { timings } = await issuer.issueWithTimings(input());
      merklize += timings.merklizeMs;
      sign += timings.signMs;
      total += timings.totalMs;
    }
    const issueRate = ISSUES / ((performance.now() - start) / 1000);
    db.close();

    return [
      {
        name: 'iden3: BJJ EdDSA-Poseidon signs (ours, @noble/curves)',
        value: round(oursRate, 0),
        unit: 'signs/s',
      },
      {
        name: 'iden3: BJJ EdDSA-Poseidon signs (@iden3/js-crypto)',
        value: round(referenceRate, 1),
        unit: 'signs/s',
      },
      { name: 'iden3: signer speed-up over js-crypto', value: round(oursRate / referenceRate, 1), unit: 'x' },
      {
        name: `iden3: revocations (tree insert + state, SQLite WAL file, ${REVOCATIONS} in a row)`,
        value: round(revokeRate, 0),
        unit: 'revocations/s',
      },
      { name: 'iden3: issue() in process', value: round(issueRate, 1), unit: 'credentials/s' },
      { name: 'iden3: issue() merklization', value: round(merklize / ISSUES, 2), unit: 'ms/credential' },
      { name: 'iden3: issue() signing', value: round(sign / ISSUES, 2), unit: 'ms/credential' },
      {
        name: 'iden3: issue() rest (claim, hashing, layout)',
        value: round((total - merklize - sign) / ISSUES, 2),
        unit: 'ms/credential',
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const { name, value, unit } of await benchIden3()) console.log(`${name}: ${value} ${unit}`);
}
