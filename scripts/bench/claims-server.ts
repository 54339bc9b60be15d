/**
 * A claims source for the hosted benchmark, run in its own process as the issuer's own servers
 * would be: `POST /lookup` answers every user as eligible with the same membership claims.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const ANSWER = JSON.stringify({
  eligible: true,
  credentialSubject: {
    givenName: 'Alice',
    familyName: 'Martin',
    memberSince: '2021-04-12',
    tier: 'gold',
    memberNumber: 1042,
  },
});

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/lookup') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(ANSWER) });
    res.end(ANSWER);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  console.log(`claims server listening on http://127.0.0.1:${(server.address() as AddressInfo).port}/lookup`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
