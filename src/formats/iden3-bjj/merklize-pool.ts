import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { MerklizedCredential } from './core-claim.js';

/** A schema's JSON-LD context as `LocalDocumentLoader.registerContext` takes it. */
export interface ContextSource {
  url: string;
  schemasDir: string;
  contextFile: string;
}

/** main → worker: merklize `credential` (its `proof`, if any, is left out) with these contexts. */
export interface MerklizeRequest {
  id: number;
  credential: Record<string, unknown>;
  contexts: ContextSource[];
}

/** worker → main. */
export type MerklizeReply =
  | { id: number; root: bigint; typeIri: string; ms: number }
  | { id: number; error: string };

export interface PooledMerklization extends MerklizedCredential {
  /** Time the worker spent merklizing (without the queue and the message passing). */
  ms: number;
}

interface Pending {
  resolve: (r: PooledMerklization) => void;
  reject: (err: Error) => void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
}

/** One worker per core (at most 8); none on a single core, where a worker only adds message passing. */
export function defaultMerklizeWorkers(): number {
  const cores = availableParallelism();
  return cores > 1 ? Math.min(cores, 8) : 0;
}

function spawnWorker(): Worker {
  // From source (tsx, vitest) the worker starts through a plain-JS entry that loads its TypeScript.
  const entry = import.meta.url.endsWith('.ts') ? './merklize-worker-boot.mjs' : './merklize-worker.js';
  return new Worker(new URL(entry, import.meta.url));
}

/** The credential itself could not be merklized (as opposed to a pool or worker failure). */
export class MerklizeError extends Error {
  override name = 'MerklizeError';
}

/**
 * Merklization of Iden3 credentials on `node:worker_threads` (docs/architecture.md). Merklizing is still the
 * largest share of a BJJ issuance (~5–10 ms a credential with merklize.ts and the WASM Poseidon,
 * about half of it JSON-LD canonicalization; ~60–90 ms with the library, mostly Poseidon), so the pool runs one merklization per core while the main thread keeps HTTP,
 * the database and the signing key.
 * Workers start on first use; an idle worker does not keep the process alive.
 */
export class MerklizePool {
  readonly size: number;
  readonly #slots: Slot[] = [];
  #nextId = 1;
  #closed = false;

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) throw new Error('the merklize pool needs at least one worker');
    this.size = size;
  }

  merklize(credential: Record<string, unknown>, contexts: ContextSource[]): Promise<PooledMerklization> {
    if (this.#closed) return Promise.reject(new Error('the merklize pool is closed'));
    const slot = this.#pick();
    const id = this.#nextId++;
    return new Promise<PooledMerklization>((resolve, reject) => {
      if (slot.pending.size === 0) slot.worker.ref();
      slot.pending.set(id, { resolve, reject });
      const request: MerklizeRequest = { id, credential, contexts };
      slot.worker.postMessage(request);
    });
  }

  /** Stops the workers; merklizations still running are rejected. */
  async close(): Promise<void> {
    this.#closed = true;
    const slots = this.#slots.splice(0);
    for (const slot of slots) this.#fail(slot, new Error('the merklize pool was closed'));
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  #pick(): Slot {
    let best: Slot | undefined;
    for (const s of this.#slots) if (!best || s.pending.size < best.pending.size) best = s;
    if (best && (best.pending.size === 0 || this.#slots.length >= this.size)) return best;
    return this.#spawn();
  }

  #spawn(): Slot {
    const slot: Slot = { worker: spawnWorker(), pending: new Map() };
    slot.worker.unref();
    slot.worker.on('message', (reply: MerklizeReply) => {
      const p = slot.pending.get(reply.id);
      if (!p) return;
      slot.pending.delete(reply.id);
      if (slot.pending.size === 0) slot.worker.unref();
      if ('error' in reply) p.reject(new MerklizeError(reply.error));
      else p.resolve({ root: reply.root, typeIri: reply.typeIri, ms: reply.ms });
    });
    // A worker that dies takes only its own requests with it; the next request starts a new one.
    slot.worker.on('error', (err) => this.#retire(slot, err));
    slot.worker.on('exit', (code) => this.#retire(slot, new Error(`merklize worker exited (${code})`)));
    this.#slots.push(slot);
    return slot;
  }

  #retire(slot: Slot, err: Error): void {
    const i = this.#slots.indexOf(slot);
    if (i >= 0) this.#slots.splice(i, 1);
    this.#fail(slot, err);
  }

  #fail(slot: Slot, err: Error): void {
    for (const p of slot.pending.values()) p.reject(err);
    slot.pending.clear();
  }
}
