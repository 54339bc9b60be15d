// Runs the hosting-service emulator alone; point the issuer's SERVICE_V1_BASE_URL at what it prints.
import { startEmulatorServer } from '../src/development/emulator/index.js';

const portText = process.env.EMULATOR_PORT ?? '4000';
const port = Number(portText);
if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  console.error(`EMULATOR_PORT: not a port number: ${portText}`);
  process.exit(1);
}
const host = process.env.EMULATOR_HOST ?? '127.0.0.1';
const jwks = process.env.EMULATOR_JWKS_URL ?? 'http://127.0.0.1:3000/.well-known/jwks.json';
try {
  new URL(jwks);
} catch {
  console.error(`EMULATOR_JWKS_URL: not a URL: ${jwks}`);
  process.exit(1);
}
const partnerId = process.env.PARTNER_ID || undefined;

const server = await startEmulatorServer({ host, port, jwks, ...(partnerId ? { partnerId } : {}) });
console.log(`hosting-service emulator listening; partner keys from ${jwks}`);
console.log(`SERVICE_V1_BASE_URL=${server.url}`);

let closing = false;
const shutdown = (signal: NodeJS.Signals): void => {
  if (closing) return;
  closing = true;
  console.log(`${signal}: shutting down`);
  server.close().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
