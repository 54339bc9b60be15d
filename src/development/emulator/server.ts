import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Emulator, EmulatorOptions } from './emulator.js';
import { createEmulator } from './emulator.js';
import { send } from './errors.js';

export interface EmulatorServerOptions extends EmulatorOptions {
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
}

export interface EmulatorServer {
  /** The v1 base URL, to use as `SERVICE_V1_BASE_URL`. */
  url: string;
  emulator: Emulator;
  close(): Promise<void>;
}

/** Starts the emulator alone: an Express app with the router at `/v1`. */
export async function startEmulatorServer(options: EmulatorServerOptions): Promise<EmulatorServer> {
  const { host = '127.0.0.1', port = 0, ...emulatorOptions } = options;
  const emulator = createEmulator(emulatorOptions);
  const app = express();
  app.disable('x-powered-by');
  app.use('/v1', emulator.router);
  app.use((req, res) => {
    send(res, 404, { code: 'NOT_FOUND', message: `no route ${req.method} ${req.path}` });
  });

  const server = await new Promise<ReturnType<typeof app.listen>>((resolve, reject) => {
    const s = app.listen(port, host, (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    url: `http://${urlHost}:${address.port}/v1`,
    emulator,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // Keep-alive sockets from fetch would otherwise hold close() open.
        server.closeAllConnections();
      }),
  };
}
