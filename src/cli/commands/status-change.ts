import { AdminApiError } from '../admin-client.js';
import { json } from '../output.js';
import { NONCE, type RegisterCommand } from './command.js';

/** `revoke`, `suspend`, `unsuspend`: one command each, the same shape over their admin routes. */
export const statusChangeCommands: RegisterCommand = (program, act) => {
  for (const [name, route, verb] of [
    ['revoke', '/admin/revoke', 'revoke (final)'],
    ['suspend', '/admin/suspend', 'suspend (needs STATUS_LIST_BITS=2)'],
    ['unsuspend', '/admin/unsuspend', 'lift the suspension of'],
  ] as const) {
    program
      .command(name)
      .description(`${verb} credentials by revocation nonce (POST ${route})`)
      .argument('<nonce...>', 'revocation nonces (decimal)')
      .option('--reason <text>', 'why (kept in the audit log)')
      .action(
        act(async (run, nonces: string[], opts: { reason?: string }) => {
          const results: Array<Record<string, unknown>> = [];
          for (const nonce of nonces) {
            if (!NONCE.test(nonce)) {
              results.push({ revocationNonce: nonce, ok: false, error: 'not a decimal revocation nonce' });
              continue;
            }
            try {
              const { body } = await run.client.call<Record<string, unknown>>('POST', route, {
                body: { revocationNonce: nonce, ...(opts.reason ? { reason: opts.reason } : {}) },
              });
              results.push({ ok: true, ...body });
            } catch (err) {
              if (!(err instanceof AdminApiError) || err.status === 0 || err.status === 403) throw err;
              results.push({
                revocationNonce: nonce,
                ok: false,
                error: `${err.status} ${err.code}: ${err.message}`,
              });
            }
          }
          if (run.json) run.io.out(json(results));
          else
            for (const r of results)
              run.io.out(
                r.ok
                  ? `${String(r.revocationNonce)}: ${String(r.status)}`
                  : `${String(r.revocationNonce)}: failed: ${String(r.error)}`,
              );
          return results.every((r) => r.ok) ? 0 : 1;
        }),
      );
  }
};
