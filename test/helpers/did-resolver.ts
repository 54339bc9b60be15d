import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestIssuer } from './issuer.js';

/** A DID resolver standing in for the chain: it knows the states `issuer` has recorded (unpublished). */
export async function didResolverFor(issuer: TestIssuer) {
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const did = decodeURIComponent(url.pathname.replace(/^\/resolver\//, ''));
    const known =
      did === issuer.ctx.iden3Did() &&
      (await issuer.ctx.iden3!.hasState(url.searchParams.get('state') ?? ''));
    res.writeHead(known ? 200 : 404, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        known
          ? {
              didDocument: {
                '@context': ['https://www.w3.org/ns/did/v1'],
                id: did,
                verificationMethod: [
                  {
                    id: `${did}#state-info-v1`,
                    type: 'Iden3StateInfo2023',
                    controller: did,
                    published: false,
                  },
                ],
              },
              didResolutionMetadata: {},
            }
          : { didResolutionMetadata: {} },
      ),
    );
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/resolver`,
    close: () => new Promise((ok) => server.close(ok)),
  };
}
