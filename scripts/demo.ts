/**
 * `npm run demo [-- --user <userId> --schema <schemaId>]`: plays the hosting service and the holder
 * for that user and schema (default demo-user-1 and membership-v1, or DEMO_USER_ID and
 * DEMO_SCHEMA_ID) against a running issuer (ISSUER_URL, default http://localhost:3000), or starts
 * one in-process when none answers: available-vc → decrypt preview → issue-vc (SD-JWT VC when the
 * schema offers it, else Iden3) → fetch the stored envelope → decrypt → verify it from the issuer's
 * public documents as `npm run admin -- verify` does → print the claims.
 *
 * It issues real credentials, so it refuses a production issuer: one whose public metadata names
 * an https issuer (production requires an https ISSUER_ORIGIN; development defaults to
 * http://localhost), and any run with NODE_ENV=production.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { exportJWK, generateKeyPair } from 'jose';
import { DEV_EMULATOR_FILE } from '../src/development/development-files.js';
import { x25519DidKey } from '../src/development/emulator/index.js';
import { fromPreviewFields, generateHolderKeyPair, openEnvelope } from '../src/envelope/index.js';
import { DocumentFetcher, verifyCredential } from '../src/formats/verify.js';

const USAGE = 'usage: npm run demo [-- --user <userId> --schema <schemaId> --out <file>]';

if (existsSync('.env')) process.loadEnvFile('.env');
let args: {
  user?: string | undefined;
  schema?: string | undefined;
  out?: string | undefined;
  help?: boolean | undefined;
};
try {
  args = parseArgs({
    options: {
      user: { type: 'string' },
      schema: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  }).values;
} catch (err) {
  console.error(`demo: ${(err as Error).message}\n${USAGE}`);
  process.exit(1);
}
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
const userId = args.user ?? process.env.DEMO_USER_ID ?? 'demo-user-1';
const schemaId = args.schema ?? process.env.DEMO_SCHEMA_ID ?? 'membership-v1';

/** The issuer's `jwt-vc-issuer` metadata `issuer`, or undefined when nothing answers there. */
async function reachable(url: string): Promise<string | undefined> {
  try {
    // Where nothing listens the connection is refused at once; the deadline is only for a server
    // that hangs, and a busy machine's issuer may take seconds to answer.
    const res = await fetch(`${url}/.well-known/jwt-vc-issuer`, { signal: AbortSignal.timeout(15_000) });
    if (!res.ok) {
      await res.body?.cancel();
      return undefined;
    }
    const issuer = ((await res.json()) as { issuer?: unknown }).issuer;
    return typeof issuer === 'string' ? issuer : '';
  } catch {
    return undefined;
  }
}

function apiKey(): string {
  if (process.env.API_KEY) return process.env.API_KEY;
  const file = join(process.env.KEYS_DIR ?? 'keys', 'dev-secrets.json');
  if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { apiKey: string }).apiKey;
  throw new Error('set API_KEY (the issuer x-api-key)');
}

/** The emulator `npm start` runs in development writes its URL to KEYS_DIR/dev-emulator.json. */
function announcedEmulatorUrl(): string {
  const file = join(process.env.KEYS_DIR ?? 'keys', DEV_EMULATOR_FILE);
  if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { url: string }).url;
  throw new Error(`set EMULATOR_URL (the hosting service v1 base URL); no ${file} from a development issuer`);
}

async function main() {
  let issuerUrl = (process.env.ISSUER_URL ?? `http://localhost:${process.env.PORT ?? 3000}`).replace(
    /\/$/,
    '',
  );
  let stop: (() => Promise<void>) | undefined;
  let emulatorUrl: string | undefined;
  if (process.env.NODE_ENV === 'production') {
    console.error('demo: refuses to run with NODE_ENV=production (it issues real credentials to demo users)');
    process.exit(1);
  }
  const origin = await reachable(issuerUrl);
  if (origin?.startsWith('https:')) {
    console.error(
      `demo: ${issuerUrl} is a production issuer (its origin ${origin} is https); the demo runs against a development server only`,
    );
    process.exit(1);
  }
  if (origin === undefined) {
    console.log(`no issuer at ${issuerUrl}: starting one in-process`);
    const { loadConfig } = await import('../src/config/config.js');
    const { createContext } = await import('../src/context.js');
    const { startDevelopment } = await import('../src/development/start.js');
    const { bind, serve } = await import('../src/server.js');
    const bound = await bind(0, '127.0.0.1');
    const loaded = loadConfig({ ...process.env, PORT: undefined, ISSUER_ORIGIN: bound.url });
    const { createLogger } = await import('../src/observability/logger.js');
    // The in-process issuer's lines, readable beside the demo's own output.
    const log = createLogger({ level: 'warn', format: 'pretty' });
    let ctx: Awaited<ReturnType<typeof createContext>> | undefined;
    // As `npm start` does in development: secrets, the emulator on its own port, example claims.
    const dev = await startDevelopment(loaded.config, loaded.secrets, {
      log,
      partnerJwks: async () => ({ keys: ctx?.keys.current().partnerKeys.map((k) => k.publicJwk) ?? [] }),
    });
    ctx = await createContext(dev.config, dev.secrets, { log });
    await dev.seedExamples(ctx.store.claims);
    const running = await serve(ctx, bound);
    issuerUrl = running.url;
    emulatorUrl = dev.emulator?.url;
    stop = async () => {
      await running.close();
      await dev.close();
    };
  }
  const serviceUrl = (process.env.EMULATOR_URL ?? emulatorUrl ?? announcedEmulatorUrl()).replace(/\/$/, '');
  const key = apiKey();
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${issuerUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
    return res;
  };

  try {
    // The holder's wallet: an X25519 encryption key (wire default) and a P-256 key for `cnf`.
    const holder = generateHolderKeyPair('x25519');
    const holderDid = x25519DidKey(Buffer.from(holder.publicKeyHex, 'hex').subarray(-32));
    const { publicKey: bindingKey } = await generateKeyPair('ES256');
    console.log(`holder ${holderDid}`);

    console.log(`\n1. POST ${issuerUrl}/available-vc (userId ${userId}, schemaId ${schemaId})`);
    const available = (await (
      await post('/available-vc', { holderDID: holderDid, pubKey: holder.publicKeyHex, userId, schemaId })
    ).json()) as {
      data: Array<{
        schemaId: string;
        proofType: string;
        credentialSubject: Parameters<typeof fromPreviewFields>[0];
      }>;
    };
    const offers = available.data.filter((d) => d.schemaId === schemaId);
    const offer =
      offers.find((d) => d.proofType === 'SD_JWT_VC') ?? offers.find((d) => d.proofType === 'BJJ_SIG_2021');
    if (!offer) throw new Error(`${userId} is not eligible for ${schemaId}`);
    console.log(
      `2. ${offer.proofType} preview, decrypted by the holder:`,
      openEnvelope(holder.privateKey, fromPreviewFields(offer.credentialSubject)),
    );

    console.log(`3. POST ${issuerUrl}/issue-vc (${offer.proofType})`);
    const issued = await post('/issue-vc', {
      holderDID: holderDid,
      pubKey: holder.publicKeyHex,
      userId,
      schemaId,
      proofType: offer.proofType,
      ...(offer.proofType === 'SD_JWT_VC' ? { signingKey: { jwk: await exportJWK(bindingKey) } } : {}),
    });
    console.log(`   → ${issued.status}`);

    console.log(`4. fetch the stored envelope from ${serviceUrl}`);
    const list = (await (
      await fetch(`${serviceUrl}/_emulator/envelopes?holderDid=${encodeURIComponent(holderDid)}`)
    ).json()) as {
      envelopes: Array<{ envelope: Parameters<typeof openEnvelope>[1]; storagePath: string }>;
    };
    const stored = list.envelopes.at(-1);
    if (!stored) throw new Error('no envelope stored for the holder');
    console.log(`   storagePath ${stored.storagePath}`);

    const opened = openEnvelope(holder.privateKey, stored.envelope);
    const credential = typeof opened === 'string' ? opened : JSON.stringify(opened);
    console.log(`5. decrypted: ${credential.slice(0, 60)}…`);
    // --out: the credential as the holder's wallet holds it, for `npm run admin -- verify <file>`.
    if (args.out) {
      writeFileSync(args.out, `${credential}\n`);
      console.log(`   written to ${args.out}`);
    }

    // The issuer's documents are fetched from issuerUrl whatever origin the credential names.
    const verified = await verifyCredential(credential, {
      fetcher: new DocumentFetcher({ origin: issuerUrl }),
      schemasDir: process.env.SCHEMAS_DIR ?? 'schemas',
    });
    console.log(`6. verified from ${issuerUrl}'s public documents:`);
    for (const c of verified.checks)
      console.log(`   ${c.ok ? 'PASS' : 'FAIL'}  ${c.check}  ${c.ok ? '' : `${c.code}: `}${c.detail}`);
    if (!verified.ok) throw new Error('the credential did not verify');
    const {
      _sd: _a,
      _sd_alg: _b,
      cnf: _c,
      status: _d,
      iss: _e,
      sub: _f,
      vct: _g,
      iat: _h,
      exp: _i,
      id: _j,
      'vct#integrity': _k,
      ...disclosed
    } = verified.claims ?? {};
    console.log('7. claims:', disclosed);
    console.log('\nverified credential ✔');
  } finally {
    await stop?.();
  }
}

main().catch((err: unknown) => {
  console.error(`demo failed: ${(err as Error).message}`);
  process.exit(1);
});
