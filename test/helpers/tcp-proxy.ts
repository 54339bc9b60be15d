import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on loopback that can be cut without a reset: a silent network partition. While cut,
 * bytes sent either way are held back (as unacknowledged segments would be) and new connections
 * are accepted but not forwarded (the server's greeting never comes); `heal()` delivers what was
 * held and lets everything flow again. `reset()` instead destroys every connection.
 */
export interface TcpProxy {
  port: number;
  /** `target` URL with its host and port replaced by the proxy's. */
  url(target: string): string;
  cut(): void;
  heal(): void;
  reset(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
  /** Bytes held back while cut, per direction. */
  toUpstream: Buffer[];
  toClient: Buffer[];
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let isCut = false;
  const pairs = new Set<Pair>();

  const flush = (pair: Pair) => {
    if (!pair.upstream) {
      const upstream = connect(targetPort, targetHost);
      pair.upstream = upstream;
      upstream.on('data', (chunk: Buffer) => {
        if (isCut) pair.toClient.push(chunk);
        else pair.client.write(chunk);
      });
      upstream.on('error', () => pair.client.destroy());
      upstream.on('close', () => pair.client.destroy());
    }
    for (const chunk of pair.toUpstream.splice(0)) pair.upstream.write(chunk);
    for (const chunk of pair.toClient.splice(0)) pair.client.write(chunk);
  };

  const server: Server = createServer((client) => {
    const pair: Pair = { client, upstream: undefined, toUpstream: [], toClient: [] };
    pairs.add(pair);
    client.on('data', (chunk: Buffer) => {
      if (isCut || !pair.upstream) pair.toUpstream.push(chunk);
      else pair.upstream.write(chunk);
    });
    client.on('error', () => pair.upstream?.destroy());
    client.on('close', () => {
      pair.upstream?.destroy();
      pairs.delete(pair);
    });
    if (!isCut) flush(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy did not bind');

  const reset = () => {
    for (const { client, upstream } of pairs) {
      client.resetAndDestroy();
      upstream?.destroy();
    }
    pairs.clear();
  };
  return {
    port: address.port,
    url(target) {
      const u = new URL(target);
      u.hostname = '127.0.0.1';
      u.port = String(address.port);
      return u.toString();
    },
    cut() {
      isCut = true;
    },
    heal() {
      isCut = false;
      for (const pair of pairs) if (!pair.client.destroyed) flush(pair);
    },
    reset,
    async close() {
      reset();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
