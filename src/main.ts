import { existsSync } from 'node:fs';
import { loadConfig } from './config/config.js';
import { ConfigError } from './config/env.js';
import { createContext } from './context.js';
import { bind, serve } from './server.js';

// One process entry: config → keys/context → server → signals (STYLE: src/main.ts).
async function main(): Promise<void> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  let loaded: ReturnType<typeof loadConfig>;
  try {
    loaded = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const line of err.problems) console.error(`config: ${line}`);
      process.exit(1);
    }
    throw err;
  }
  let { config, secrets } = loaded;
  const bound = await bind(config.port, config.host);
  if (config.port === 0 && !process.env.ISSUER_ORIGIN && !config.production) {
    // An ephemeral port (benchmarks, scripts): the dev origin follows the port actually bound.
    ({ config, secrets } = loadConfig({
      ...process.env,
      ISSUER_ORIGIN: bound.url.replace('127.0.0.1', 'localhost'),
    }));
  }
  let ctx: Awaited<ReturnType<typeof createContext>>;
  try {
    ctx = await createContext(config, secrets);
  } catch (err) {
    console.error(`start-up: ${(err as Error).message}`);
    bound.server.close();
    process.exit(1);
  }
  const running = await serve(ctx, bound);
  console.log(`issuer-kit listening on ${running.url} as ${config.issuerOrigin} (${config.nodeEnv})`);
  if (ctx.emulator)
    console.log(`hosting-service emulator mounted at ${running.url}/emulator/v1 (SERVICE_V1_BASE_URL unset)`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: shutting down`);
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

await main();
