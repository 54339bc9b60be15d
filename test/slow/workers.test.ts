import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulatorServer } from '../../src/development/emulator/index.js';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { entryArgs } from '../helpers/entry.js';
import { issuerJwks } from '../helpers/jwks.js';
import { removeDir, tempDir } from '../helpers/tmp.js';

/** Output of a child process, with a wait for a line matching a pattern. */
function watch(child: ChildProcess) {
  let out = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    out += chunk;
  });
  return {
    text: () => out,
    waitFor: (pattern: RegExp) =>
      new Promise<RegExpExecArray>((resolve, reject) => {
        const check = () => {
          const m = pattern.exec(out);
          if (m) {
            child.stdout!.off('data', check);
            child.off('exit', exited);
            resolve(m);
          }
        };
        const exited = (code: number | null) => reject(new Error(`exited with ${code}: ${out}`));
        child.stdout!.on('data', check);
        child.once('exit', exited);
        check();
      }),
  };
}

// docs/several-instances.md "Several processes on one machine": WORKERS=2 serves from two
// processes sharing the SQLite file, with the same results as one: no index, nonce or upload twice.
describe('WORKERS=2', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('issues concurrently from two worker processes without a duplicate index, nonce or upload', async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    let issuerUrl: string | undefined;
    const emulator = await startEmulatorServer({ jwks: issuerJwks(() => issuerUrl) });
    cleanup.push(() => emulator.close());
    const child = spawn(process.execPath, entryArgs('src/main.ts'), {
      env: {
        ...process.env,
        NODE_ENV: 'development',
        PORT: '0',
        WORKERS: '2',
        KEYS_DIR: join(dir, 'keys'),
        DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
        SERVICE_V1_BASE_URL: emulator.url,
        RATE_LIMIT_HOLDER_PER_MIN: '0',
        // Every request must answer 201: an upload slowed down by a busy machine is not a failure here.
        UPLOAD_TIMEOUT_MS: '120000',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const output = watch(child);
    cleanup.push(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    });
    issuerUrl = (await output.waitFor(/issuer-kit listening on (http:\/\/\S+)/))[1]!;
    // Each worker writes its own line (pino writes asynchronously, so a worker's line may reach the
    // pipe after the primary's): wait for both rather than assume an order.
    await output.waitFor(/worker \d+ \(pid \d+\) serving[\s\S]*worker \d+ \(pid \d+\) serving/);
    const workerPids = new Set(
      [...output.text().matchAll(/worker \d+ \(pid (\d+)\) serving/g)].map((m) => m[1]),
    );
    expect(workerPids.size).toBe(2);
    const { apiKey } = JSON.parse(readFileSync(join(dir, 'keys', 'dev-secrets.json'), 'utf8')) as {
      apiKey: string;
    };

    const holder = generateHolderKeyPair();
    const statuses = await Promise.all(
      Array.from({ length: 80 }, async (_, i) => {
        const res = await fetch(`${issuerUrl}/issue-vc`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
          body: JSON.stringify({
            holderDID: `did:example:worker-${i}`,
            pubKey: holder.publicKeyHex,
            userId: 'demo-user-1',
            schemaId: 'membership-v1',
          }),
        });
        await res.arrayBuffer();
        return res.status;
      }),
    );
    expect(statuses).toEqual(statuses.map(() => 201));

    const db = new Database(join(dir, 'issuer.db'), { readonly: true });
    cleanup.push(() => void db.close());
    const rows = db
      .prepare(
        'SELECT credential_id, revocation_nonce, status_partition, status_index, upload_state FROM issuances',
      )
      .all() as Array<{
      credential_id: string;
      revocation_nonce: number;
      status_partition: number;
      status_index: number;
      upload_state: string;
    }>;
    expect(rows).toHaveLength(80);
    expect(new Set(rows.map((r) => r.revocation_nonce)).size).toBe(80);
    expect(new Set(rows.map((r) => `${r.status_partition}/${r.status_index}`)).size).toBe(80);
    expect(rows.every((r) => r.upload_state === 'uploaded')).toBe(true);
    // Each credential reached the hosting service once, and both workers served.
    const uploads = emulator.emulator.state.requests
      .filter((r: { route: string }) => r.route === 'dstorage')
      .map((r) => r.externalId);
    expect(uploads).toHaveLength(80);
    expect(new Set(uploads)).toEqual(new Set(rows.map((r) => r.credential_id)));

    // GET /metrics answers for the whole cluster (prom-client's AggregatorRegistry
    // through the primary), whichever worker takes it: counters are summed over the workers, the
    // database-wide outbox gauges are not. Three uploads marked given-up make the gauge non-zero.
    const writable = new Database(join(dir, 'issuer.db'), { timeout: 60_000 });
    writable
      .prepare(
        "UPDATE issuances SET upload_state = 'failed' WHERE credential_id IN (SELECT credential_id FROM issuances LIMIT 3)",
      )
      .run();
    writable.close();
    const sum = (text: string, pattern: RegExp) =>
      [...text.matchAll(pattern)].reduce((n, m) => n + Number(m[1]), 0);
    // Several at once: each scrape gets its own answer.
    const scrapes = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const res = await fetch(`${issuerUrl}/metrics`);
        return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
      }),
    );
    for (const { status, type, text } of scrapes) {
      expect(status).toBe(200);
      expect(type).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(sum(text, /^issuer_issuances_total\{[^}]*outcome="issued"[^}]*\} (\S+)$/gm)).toBe(80);
      expect(
        sum(text, /^issuer_http_requests_total\{[^}]*route="\/issue-vc"[^}]*status="201"[^}]*\} (\S+)$/gm),
      ).toBe(80);
      expect(sum(text, /^issuer_upload_outbox_failed (\S+)$/gm)).toBe(3);
      expect(sum(text, /^issuer_upload_outbox_pending (\S+)$/gm)).toBe(0);
    }

    // SIGTERM to the primary stops the workers, then the primary.
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    for (const pid of workerPids) expect(() => process.kill(Number(pid), 0)).toThrow();
  });

  it("a worker's cluster scrape fails with UNAVAILABLE (503) when the primary does not answer", async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, '../fixtures/silent-primary.ts')],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const output = watch(child);
    const line = (await output.waitFor(/^\{.*\}$/m))[0];
    expect(JSON.parse(line)).toEqual({ status: 503, code: 'UNAVAILABLE', isAppError: true });
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
  });
});
