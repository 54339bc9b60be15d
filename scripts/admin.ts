/**
 * `npm run admin -- <command>`: the issuer admin CLI (src/cli). It talks to the running server
 * over HTTP: ADMIN_API_KEY from the environment or .env (dev: KEYS_DIR/dev-secrets.json),
 * the server from --url or ISSUER_URL (default http://localhost:$PORT or 3000).
 */
import { runAdminCli } from '../src/cli/admin-cli.js';

process.exitCode = await runAdminCli(process.argv);
