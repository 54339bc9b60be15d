import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { newWebhookEventId } from '../../src/store/webhook-store.js';
import { WebhookSender } from '../../src/webhooks/deliver.js';
import { newWebhookSecret, webhookHeaders, webhookSigningKey } from '../../src/webhooks/signature.js';
import { Webhooks } from '../../src/webhooks/webhooks.js';
import { removeDir, tempDir } from '../../test/helpers/tmp.js';
import type { Row } from './issuance.js';
import { issueAndUpload } from './store-engines.js';

/** Events per measured round, and rounds (the first warms the JIT and the connections). */
const EVENTS = 3200;
const ROUNDS = 4;
/** Changes per transaction when writing events: about what a group commit holds under load. */
const PER_TRANSACTION = 32;

/** A `credential.issued` event's data, as an issuance writes it. */
const DATA = JSON.stringify({
  credentialId: '0b9cf7d3-5d1c-4d43-9a4e-3f4a9f6e2c11',
  schemaId: 'membership-v1',
  proofType: 'SD_JWT_VC',
  channel: 'hosted',
  holderDid: 'did:example:bench-123456',
  revocationNonce: 1234567890,
  status: { uri: 'https://issuer.example.com/statuslist/0', idx: 12345 },
  expiresAt: '2030-01-01T00:00:00.000Z',
});

/** Hosted issuances per WAL count. */
const FRAMES_COUNT = 1000;

/**
 * WAL pages written per hosted issuance by the SQLite store alone (the insert with its event, the
 * "uploaded" mark with its `credential.delivered` event), `inFlight` at a time, with or without
 * an endpoint; checkpoints off while counting. Deterministic within a few hundredths: it counts
 * pages, not time. Fewer in flight means smaller group commits, each writing its tail pages.
 */
async function walPagesPerIssuance(inFlight: number, endpoint: boolean): Promise<number> {
  const dir = tempDir();
  const store = openSqliteStore(join(dir, 'issuer.db'));
  try {
    if (endpoint)
      await store.webhooks.addEndpoint({
        id: 'wh_bench',
        url: 'https://hooks.example/bench',
        events: ['*'],
        description: null,
        secret: 'whsec_YmVuY2g=',
        createdAt: new Date(),
      });
    for (let i = 0; i < 200; i++) await issueAndUpload(store);
    store.db.pragma('wal_autocheckpoint = 0');
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    let left = FRAMES_COUNT;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (left-- > 0) await issueAndUpload(store);
      }),
    );
    const pageSize = store.db.pragma('page_size', { simple: true }) as number;
    // A WAL frame is a 24-byte header and a page.
    return statSync(join(dir, 'issuer.db-wal')).size / (pageSize + 24) / FRAMES_COUNT;
  } finally {
    await store.close();
    removeDir(dir);
  }
}

const cpuMicros = (since: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(since);
  return d.user + d.system;
};

/** Events per leased batch, as the worker leases them (its default batch size). */
const BATCH = 64;

/**
 * What Standard Webhooks itself costs per event, with no database: the HMAC-SHA256 signature and
 * one POST of the signed body through the same sender the worker uses (undici, keep-alive pool),
 * `BATCH` at a time to `url`. CPU per event. The kit's own webhook work is what the worker and the
 * event write cost beyond this.
 */
async function requiredPartsPerEvent(sender: WebhookSender, url: string, n: number): Promise<number> {
  const key = webhookSigningKey(newWebhookSecret());
  const c0 = process.cpuUsage();
  for (let sent = 0; sent < n; sent += BATCH) {
    const now = new Date();
    const outgoing = Array.from({ length: Math.min(BATCH, n - sent) }, (_, i) => {
      // The body as the worker builds it: `{ type, timestamp, sequence, data }`.
      const body = `{"type":"credential.issued","timestamp":"${now.toISOString()}","sequence":${sent + i},"data":${DATA}}`;
      return { url, headers: webhookHeaders([key], newWebhookEventId(), now, body), body };
    });
    const results = await sender.postAll(outgoing);
    if (!results.every((r) => r.ok)) throw new Error('the receiver did not answer 2xx');
  }
  return cpuMicros(c0) / n;
}

/**
 * The webhook path's parts, in this process on SQLite, with CPU read around each (so the figures
 * do not move with the issuance rate, as the side-by-side hosted runs do): writing an event inside
 * a change's transaction (and the same with no endpoint: the check alone), and the worker
 * delivering events to a receiver in another process (fan-out into leased deliveries, signature,
 * POST, "delivered" mark). A hosted issuance writes and delivers two events. Beside them, the
 * required parts alone (`requiredPartsPerEvent`), alternated with the worker's rounds.
 */
export async function benchWebhookParts(): Promise<Row[]> {
  const dir = tempDir();
  const receiver = spawn(
    process.execPath,
    [
      '-e',
      `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => s.writeHead(204).end()); })
        .listen(0, '127.0.0.1', function () { console.log(this.address().port); });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const store = openSqliteStore(join(dir, 'issuer.db'));
  const sender = new WebhookSender({ production: false, allowPrivate: false });
  const webhooks = new Webhooks(store.webhooks, {
    policy: { production: false, allowPrivate: false },
    kek: undefined,
    maxAttempts: 15,
    // Sweeps run when the bench calls them.
    sweepMs: 3_600_000,
  });
  try {
    const pages: Row[] = [];
    for (const inFlight of [4, 32])
      for (const endpoint of [false, true])
        pages.push({
          name: `webhook store alone, ${inFlight} in flight: WAL pages per hosted issuance, ${endpoint ? 'one endpoint' : 'no endpoint'}`,
          value: await walPagesPerIssuance(inFlight, endpoint),
          unit: '',
        });
    const [port] = (await once(receiver.stdout!, 'data')) as [Buffer];
    const write = (n: number) => {
      const tx = store.db.transaction(() => {
        for (let i = 0; i < PER_TRANSACTION; i++)
          store.webhooks.insertEvent(
            { id: newWebhookEventId(), type: 'credential.issued', data: DATA },
            new Date(),
          );
      });
      const c0 = process.cpuUsage();
      for (let i = 0; i < n / PER_TRANSACTION; i++) tx.immediate();
      return cpuMicros(c0) / n;
    };
    const empty = store.db.transaction(() => {});
    const emptyTx = () => {
      const c0 = process.cpuUsage();
      for (let i = 0; i < EVENTS / PER_TRANSACTION; i++) empty.immediate();
      return cpuMicros(c0) / EVENTS;
    };

    // No endpoint: what every change pays to learn that no event is wanted.
    const none: number[] = [];
    for (let r = 0; r < ROUNDS; r++) none.push(write(EVENTS) - emptyTx());

    const url = `http://127.0.0.1:${String(port).trim()}/hooks`;
    await webhooks.add({ url, events: ['*'] });
    await webhooks.start();
    const written: number[] = [];
    const delivered: number[] = [];
    const required: number[] = [];
    const workerPages: number[] = [];
    const wal = `${store.db.name}-wal`;
    for (let r = 0; r < ROUNDS; r++) {
      written.push(write(EVENTS) - emptyTx());
      // The worker's WAL pages: from an empty WAL, checkpoints off while it runs.
      store.db.pragma('wal_checkpoint(TRUNCATE)');
      store.db.pragma('wal_autocheckpoint = 0');
      const c0 = process.cpuUsage();
      await webhooks.sweep();
      delivered.push(cpuMicros(c0) / EVENTS);
      const pageSize = store.db.pragma('page_size', { simple: true }) as number;
      workerPages.push(statSync(wal).size / (pageSize + 24) / EVENTS);
      store.db.pragma('wal_autocheckpoint = 1000');
      // Alternated with the worker's rounds, so that both see the same state of the machine.
      required.push(await requiredPartsPerEvent(sender, url, EVENTS));
    }
    const pending = store.db
      .prepare("SELECT count(*) AS n FROM webhook_deliveries WHERE state <> 'delivered'")
      .get() as { n: number };
    if (pending.n !== 0) throw new Error(`${pending.n} deliveries were not delivered`);
    // The first round warms up; the median of the others.
    const median = (xs: number[]) => {
      const s = xs.slice(1).sort((a, b) => a - b);
      return s[Math.floor(s.length / 2)]!;
    };
    const perIssuance = 2 * (median(written) + median(delivered));
    const requiredPerIssuance = 2 * median(required);
    return [
      { name: 'webhook event write, no endpoint: CPU per change', value: median(none), unit: 'µs' },
      {
        name: `webhook event write: CPU per event (${PER_TRANSACTION} per transaction)`,
        value: median(written),
        unit: 'µs',
      },
      {
        name: 'webhook worker: CPU per delivered event (receiver in another process)',
        value: median(delivered),
        unit: 'µs',
      },
      { name: 'webhook parts per hosted issuance (2 events)', value: perIssuance / 1000, unit: 'ms' },
      {
        name: 'webhook required parts alone: HMAC + one POST per event, no database',
        value: median(required),
        unit: 'µs',
      },
      {
        name: 'webhook required parts per hosted issuance (2 events)',
        value: requiredPerIssuance / 1000,
        unit: 'ms',
      },
      {
        name: "webhook parts per hosted issuance beyond the required ones (the kit's own)",
        value: (perIssuance - requiredPerIssuance) / 1000,
        unit: 'ms',
      },
      { name: 'webhook worker: WAL pages per delivered event', value: median(workerPages), unit: '' },
      ...pages,
    ];
  } finally {
    await webhooks.stop();
    await sender.close();
    store.db.close();
    receiver.kill();
    removeDir(dir);
  }
}
