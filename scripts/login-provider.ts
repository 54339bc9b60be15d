/**
 * `npm run login-provider [-- --port <port>]`: a development OpenID Connect provider on loopback
 * (scripts/login-provider/provider.ts: `oidc-provider` with its development sign-in pages, any user
 * name and password, everything in memory), for trying the OpenID4VCI authorization code flow
 * without a login service of your own (docs/haip.md "Trying the authorization code flow"). Its
 * client for the issuer is `issuer-kit` with the secret `development-only-login-secret`, and it takes
 * any issuer on a loopback address. It prints one JSON line with the address it listens on, and
 * runs until stopped. Never for production.
 */
import { parseArgs } from 'node:util';
import { startDevLoginProvider } from './login-provider/provider.js';

const USAGE = 'usage: npm run login-provider [-- --port <port>]  (default 3001; 0: any free port)';

let port: number;
try {
  const { values } = parseArgs({
    options: { port: { type: 'string', default: '3001' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port: not a port: ${values.port}`);
} catch (err) {
  console.error(`login-provider: ${(err as Error).message}\n${USAGE}`);
  process.exit(1);
}

if (process.env.NODE_ENV === 'production') {
  console.error('login-provider: a development tool; refuses to run with NODE_ENV=production');
  process.exit(1);
}
const started = await startDevLoginProvider({ port });
console.log(
  JSON.stringify({
    event: 'listening',
    url: started.issuer,
    msg: `development login provider at ${started.issuer} (client ${started.clientId}); OID4VCI_LOGIN_ISSUER=${started.issuer}`,
  }),
);
const stop = () => void started.close().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
