import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.js';
import type { AppContext } from './context.js';
import { ERROR_STATUS, type ErrorCode } from './errors.js';
import type { DoctorItem } from './http/routes/console/console.js';

export interface RunningServer {
  server: Server;
  /** http://host:port of the listening socket. */
  url: string;
  /** The ADMIN_PORT listener, when there is one. */
  admin: { server: Server; url: string } | undefined;
  close(): Promise<void>;
}

function starting(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(ERROR_STATUS.UNAVAILABLE, {
    'content-type': 'application/json; charset=utf-8',
    'retry-after': '1',
  });
  res.end(JSON.stringify({ code: 'UNAVAILABLE' satisfies ErrorCode, message: 'starting up' }));
}

/** Binds a socket (port 0 = ephemeral) before the app exists, so the origin can be known first. */
export async function bind(port: number, host: string): Promise<{ server: Server; url: string }> {
  // Until the app is attached, answer rather than leave a request hanging (a readiness probe
  // may arrive while keys, schemas and the database are still loading).
  const server = createServer(starting);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { server, url: `http://${urlHost}:${address.port}` };
}

/**
 * Serves the app on a bound socket and starts the upload outbox; with `recoverUploads` (the default;
 * not for a later worker of a running cluster) every pending upload is retried at once. With
 * `admin` (ADMIN_PORT), admin routes answer there only and 404 on the main socket.
 */
export async function serve(
  ctx: AppContext,
  bound: { server: Server; url: string },
  options: {
    recoverUploads?: boolean;
    admin?: { server: Server; url: string } | undefined;
    /** `admin doctor` for the console's Overview (main.ts hands it in: the CLI sits above the app). */
    doctor?: (() => Promise<DoctorItem[]>) | undefined;
  } = {},
): Promise<RunningServer> {
  const admin = options.admin;
  const extras = { doctor: options.doctor };
  attach(bound.server, createApp(ctx, admin ? 'public' : 'all', extras));
  if (admin) attach(admin.server, createApp(ctx, 'admin', extras));
  await startBackground(ctx, options.recoverUploads ?? true);
  return {
    server: bound.server,
    url: bound.url,
    admin,
    close: () => drain(ctx, [bound.server, ...(admin ? [admin.server] : [])], ctx.config.shutdownGraceMs),
  };
}

/**
 * Starts what a context runs in the background (the outbox, webhooks, bulk status changes, the
 * renewal sweep); with `recover`, the pending uploads are retried at once. A context's `close`
 * stops them.
 */
export async function startBackground(ctx: AppContext, recover: boolean): Promise<void> {
  await ctx.outbox.start({ recover });
  await ctx.webhooks.start();
  ctx.statusJobs.start();
  ctx.renewal.start();
  ctx.lifecycle.recovered = true;
}

export function attach(server: Server, app: (req: IncomingMessage, res: ServerResponse) => void): void {
  server.off('request', starting);
  server.on('request', app);
}

/**
 * Graceful drain (docs/operations.md "Shutdown"): readiness turns 503 at once and new requests are
 * refused; the listeners stop accepting; requests in flight finish, up to `graceMs`. When the
 * grace runs out, the Idempotency-Key claims of the requests still running are released (a retry is
 * not told 409), then each is answered 503 (what it recorded stays recorded: an issuance stays
 * pending in the outbox), outbound calls are aborted, and the rest closes: the outbox after its
 * aborted attempts are recorded, then the database.
 */
export async function drain(ctx: AppContext, servers: Server[], graceMs: number): Promise<void> {
  ctx.lifecycle.draining = true;
  const closed = Promise.all(
    servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
  );
  for (const server of servers) server.closeIdleConnections();
  const inFlight = ctx.lifecycle.inFlight;
  const { finished, unfinished, releasedClaims } = await finishInFlight(ctx, graceMs);
  if (!finished)
    ctx.log.warn(
      { event: 'drain_timeout', graceMs, unfinished, releasedClaims },
      'shutdown grace ran out; unfinished requests answered 503 and outbound calls aborted',
    );
  for (const server of servers) server.closeAllConnections();
  await closed;
  await ctx.close();
  ctx.log.info({ event: 'drained', inFlightAtStart: inFlight, finished }, 'server closed');
}

/**
 * Waits for the context's requests in flight to finish, up to `graceMs`. When the grace runs out,
 * the Idempotency-Key claims of those still running are released, each is answered 503, and the
 * context's outbound calls are aborted (its shutdown drain, and a tenant's removal).
 */
export async function finishInFlight(
  ctx: AppContext,
  graceMs: number,
): Promise<{ finished: boolean; unfinished: number; releasedClaims: number }> {
  if (await ctx.lifecycle.idle(graceMs)) return { finished: true, unfinished: 0, releasedClaims: 0 };
  // Released before the 503s go out: a client told to retry must not find its claim still held.
  const releasedClaims = await ctx.lifecycle.abandon();
  const unfinished = await ctx.lifecycle.interrupt();
  await ctx.http.destroy();
  return { finished: false, unfinished, releasedClaims };
}
