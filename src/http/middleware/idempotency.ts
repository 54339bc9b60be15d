import type { RequestHandler } from 'express';
import { AppError } from '../../errors.js';
import { canonicalJson, sha256Hex } from '../../issuance/canonical.js';
import type { Lifecycle } from '../../observability/lifecycle.js';
import type { IdempotencyStore } from '../../store/store.js';

const KEY = /^[\x21-\x7e]{1,255}$/;
/** A first request still unfinished after this long belongs to a process that died: take it over. */
const STALE_MS = 5 * 60_000;
/** How long an answer is replayed (a resumed batch is usually rerun within days). */
const RETENTION_MS = 30 * 24 * 3600_000;
const PRUNE_EVERY_MS = 3600_000;

/**
 * `Idempotency-Key` on admin mutations: a repeat with the same key and
 * body replays the first 2xx answer (status and body); the same key with another body is 409;
 * a repeat while the first is still running is 409. Failed requests are forgotten, so a retry
 * with the same key runs again. Without the header the route behaves as usual.
 */
export function idempotent(
  store: IdempotencyStore,
  scope: string,
  handler: RequestHandler,
  /** A drain that runs out of grace releases the claims of requests still running. */
  lifecycle?: Pick<Lifecycle, 'holdUntilDone'>,
): RequestHandler {
  let lastPrune = 0;
  return async (req, res, next) => {
    const key = req.get('idempotency-key');
    if (key === undefined) {
      await handler(req, res, next);
      return;
    }
    if (!KEY.test(key)) {
      throw new AppError('INVALID_PARAMETER', 'Idempotency-Key: 1 to 255 visible ASCII characters', {
        field: 'Idempotency-Key',
      });
    }
    const now = new Date();
    if (now.getTime() - lastPrune > PRUNE_EVERY_MS) {
      lastPrune = now.getTime();
      await store.prune(new Date(now.getTime() - RETENTION_MS));
    }
    const begun = await store.begin(scope, key, sha256Hex(canonicalJson(req.body ?? null)), now, STALE_MS);
    switch (begun.kind) {
      case 'replay':
        res.set('Idempotent-Replayed', 'true');
        res.status(begun.status).json(begun.body);
        return;
      case 'mismatch':
        throw new AppError('CONFLICT', 'Idempotency-Key: already used with a different request body', {
          field: 'Idempotency-Key',
          reason: 'mismatch',
        });
      case 'in-progress':
        throw new AppError(
          'CONFLICT',
          'Idempotency-Key: the first request with this key is still running; retry later',
          { field: 'Idempotency-Key', reason: 'in-progress' },
        );
      case 'started':
        break;
    }
    const done = lifecycle?.holdUntilDone(() => store.release(scope, key)) ?? (() => {});

    // The answer is stored before it is sent, so a repeat can never overtake the first answer.
    let settled = false;
    const send = res.json.bind(res);
    res.json = (body: unknown) => {
      if (settled) return send(body);
      settled = true;
      done();
      const status = res.statusCode;
      const saved =
        status >= 200 && status < 300 ? store.complete(scope, key, status, body) : store.release(scope, key);
      saved.then(
        () => send(body),
        (err: unknown) => next(err),
      );
      return res;
    };
    // A client that hangs up does not stop the request: its answer is still stored for the retry.
    try {
      await handler(req, res, next);
    } finally {
      // A thrown error reaches the error handler, whose res.json above releases the claim.
      if (!settled) done();
    }
    if (!settled) {
      // The handler answered without a JSON body: nothing to replay.
      settled = true;
      await store.release(scope, key);
    }
  };
}
