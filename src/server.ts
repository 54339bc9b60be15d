import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.js';
import type { AppContext } from './context.js';

export interface RunningServer {
  server: Server;
  /** http://host:port of the listening socket. */
  url: string;
  close(): Promise<void>;
}

function starting(_req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' });
  res.end(JSON.stringify({ code: 'UNAVAILABLE', message: 'starting up' }));
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

/** Serves the app on a bound socket and starts the upload outbox (which retries every pending upload). */
export async function serve(ctx: AppContext, bound: { server: Server; url: string }): Promise<RunningServer> {
  const app = createApp(ctx);
  bound.server.off('request', starting);
  bound.server.on('request', app);
  ctx.setListenUrl(bound.url);
  await ctx.outbox.start();
  return {
    server: bound.server,
    url: bound.url,
    async close() {
      await new Promise<void>((resolve) => {
        bound.server.close(() => resolve());
        bound.server.closeAllConnections();
      });
      await ctx.close();
    },
  };
}
