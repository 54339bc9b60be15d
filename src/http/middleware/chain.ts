import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * A route's middleware and handler as one request handler, run in order as Express runs a route's
 * stack: each calls `next()` for the following one; `next(err)`, a throw or a rejected promise ends
 * the chain with that error, and `next('route')` or `next('router')` leaves it as Express would,
 * since the value reaches Express's own `next`. Express gives each function of a route a layer of
 * its own (an object, a compiled path and a closure each); a process serving many tenants builds
 * every route of every tenant, so one layer per route keeps that to a fifth, and a request walks
 * one layer instead of one per function.
 */
export function chain(handlers: readonly RequestHandler[]): RequestHandler {
  // Express skips a four-argument function in a route's normal flow (it handles errors only).
  const steps = handlers.filter((h) => h.length <= 3);
  if (steps.length === 1) return steps[0]!;
  return (req: Request, res: Response, done: NextFunction) => {
    let at = 0;
    const next: NextFunction = (err?: unknown) => {
      if (err) {
        done(err);
        return;
      }
      const step = steps[at++];
      if (!step) {
        done();
        return;
      }
      try {
        const ret = step(req, res, next) as unknown;
        if (typeof (ret as PromiseLike<unknown> | undefined)?.then === 'function')
          (ret as PromiseLike<unknown>).then(undefined, (error: unknown) =>
            next(error || new Error('Rejected promise')),
          );
      } catch (error) {
        next(error);
      }
    };
    next();
  };
}
