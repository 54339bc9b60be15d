import { type KeyBackendConfig, loadKeyBackendConfig } from '../config/key-backend-config.js';
import type { KeyBackend } from './key-backend.js';
import { softwareBackend } from './software-backend.js';

/** The backend KEY_BACKEND names, opened once per process (the PIN never leaves this call). */
export async function openKeyBackend(config: KeyBackendConfig, pin: string | undefined): Promise<KeyBackend> {
  if (config.kind === 'software') return softwareBackend;
  // Loaded only when chosen: the PKCS#11 binding is a native addon.
  const { openPkcs11Backend } = await import('./pkcs11-backend.js');
  return openPkcs11Backend(config, pin ?? '');
}

/** The backend the environment names (KEY_BACKEND, PKCS11_*), for commands that run without a server. */
export async function keyBackendFromEnv(env: NodeJS.ProcessEnv, cwd = process.cwd()): Promise<KeyBackend> {
  const { backend, pin } = loadKeyBackendConfig(env, cwd);
  return openKeyBackend(backend, pin);
}
