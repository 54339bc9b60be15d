import { performance } from 'node:perf_hooks';
import { parentPort } from 'node:worker_threads';
import { merklizeCredential } from './core-claim.js';
import { LocalDocumentLoader } from './document-loader.js';
import type { MerklizeReply, MerklizeRequest } from './merklize-pool.js';

// The MerklizePool's worker: the same merklizeCredential as in process, with its own local loader
// (same shipped contexts, schema contexts registered from the requests) and its own hash memo.
const port = parentPort;
if (!port) throw new Error('merklize-worker runs as a worker thread (MerklizePool)');
const loader = new LocalDocumentLoader();

// One merklization at a time, in arrival order: `ms` is then the merklization's own time, and the
// pool's least-busy choice sees the real queue.
let queue: Promise<void> = Promise.resolve();
port.on('message', (req: MerklizeRequest) => {
  queue = queue.then(async () => {
    const t0 = performance.now();
    let reply: MerklizeReply;
    try {
      for (const c of req.contexts) loader.registerContext(c.url, c.schemasDir, c.contextFile);
      const { root, typeIri } = await merklizeCredential(req.credential, loader.load);
      reply = { id: req.id, root, typeIri, ms: performance.now() - t0 };
    } catch (err) {
      reply = { id: req.id, error: err instanceof Error ? err.message : String(err) };
    }
    port.postMessage(reply);
  });
});
