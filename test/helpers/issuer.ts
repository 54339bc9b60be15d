import { join } from 'node:path';
import { loadConfig } from '../../src/config/config.js';
import { type AppContext, type ContextOptions, createContext } from '../../src/context.js';
import { bind, type RunningServer, serve } from '../../src/server.js';
import { tempDir } from './tmp.js';

export { removeDir, tempDir } from './tmp.js';

export const TEST_API_KEY = 'test-api-key-0123456789abcdef0123456789';
export const TEST_ADMIN_API_KEY = 'test-admin-key-0123456789abcdef012345678';
export const TEST_PARTNER_ID = '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11';

export interface TestIssuer {
  url: string;
  ctx: AppContext;
  dir: string;
  running: RunningServer;
  close(): Promise<void>;
  /** fetch against the issuer with the holder API key and a JSON body. */
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  admin(path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
}

export interface StartOptions {
  /** Working folder for keys and the database; a fresh temp folder by default. Reuse it to restart. */
  dir?: string;
  /** Listen port (default: ephemeral). A restart reuses the previous one to keep ISSUER_ORIGIN. */
  port?: number;
  env?: Record<string, string>;
  context?: ContextOptions;
  /** Called with the context before the server starts (and before the outbox resumes). */
  beforeServe?: (ctx: AppContext) => void;
}

/** The real app on an ephemeral loopback port, with its own keys and SQLite file. */
export async function startIssuer(options: StartOptions = {}): Promise<TestIssuer> {
  const dir = options.dir ?? tempDir();
  const bound = await bind(options.port ?? 0, '127.0.0.1');
  const { config, secrets } = loadConfig(
    {
      NODE_ENV: 'test',
      ISSUER_ORIGIN: bound.url,
      DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
      KEYS_DIR: join(dir, 'keys'),
      API_KEY: TEST_API_KEY,
      ADMIN_API_KEY: TEST_ADMIN_API_KEY,
      PARTNER_ID: TEST_PARTNER_ID,
      ...options.env,
    },
    process.cwd(),
  );
  const ctx = await createContext(config, secrets, {
    log: () => {},
    outbox: { baseBackoffMs: 5, maxBackoffMs: 50 },
    ...options.context,
  });
  options.beforeServe?.(ctx);
  const running = await serve(ctx, bound);
  const url = running.url;
  return {
    url,
    ctx,
    dir,
    running,
    close: () => running.close(),
    post: (path, body, headers = {}) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': TEST_API_KEY, ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    admin: (path, body, headers = {}) =>
      fetch(`${url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json', 'x-admin-api-key': TEST_ADMIN_API_KEY, ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
  };
}
