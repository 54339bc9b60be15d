import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.js';
import type { AppContext } from './context.js';

export interface RunningServer {
  server: Server;
  /** http://host:port of the listening socket. */
  url: string;
  close(): Promise<void>;
}

/** Binds a socket (port 0 = ephemeral) before the app exists, so the origin can be known first. */
export async function bind(port: number, host: string): Promise<{ server: Server; url: string }> {
  const server = createServer();
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
