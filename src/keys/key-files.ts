/**
 * Names of files and folders in KEYS_DIR, apart from the code that writes them, so that a command
 * needing only a name (the admin CLI's settings) does not load the key and certificate libraries.
 */

/** The development CA's key and certificate, and its certificate alone (src/keys/dev-ca.ts). */
export const DEV_CA_FILE = 'dev-ca.json';
export const DEV_CA_PEM = 'dev-ca.pem';

/** Where production `keys:generate` moves what a development start wrote in KEYS_DIR (inside KEYS_DIR). */
export const DEVELOPMENT_KEYS_SUBDIR = 'development';

/** The API keys and partner id a development start generates (src/development/development-files.ts). */
export const DEV_SECRETS_FILE = 'dev-secrets.json';
