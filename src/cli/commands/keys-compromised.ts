import type { Command } from 'commander';
import { Option } from 'commander';
import { json } from '../output.js';
import type { Act } from './command.js';
import { confirm, followJob, reportJob } from './status-bulk.js';

interface Plan {
  kid: string;
  active: boolean;
  alreadyCompromised: boolean;
  credentials: number;
  /** Dry run: why the rotation away from the key would be refused (x5c mode), else null. */
  rotationRefused?: string | null;
  rotatedTo?: string | null;
  jobId?: string;
  statusListsRepublished?: number;
}

/** `keys compromised <kid>`: the key-compromise playbook (POST /admin/keys/compromised). */
export function addKeysCompromisedCommand(keys: Command, act: Act): void {
  keys
    .command('compromised')
    .description(
      'a credential-signing key leaked: rotate away from it, stop publishing it, revoke every credential it signed (POST /admin/keys/compromised)',
    )
    .argument('<kid>', 'the key (see keys list)')
    .addOption(
      new Option('--reason <text>', 'why (kept in the audit log with every change)').makeOptionMandatory(),
    )
    .option('--dry-run', 'print what it would do; change nothing')
    .option('--yes', 'do not ask for confirmation (scripts)')
    .option('--no-wait', 'print the revocation job id and return at once')
    .action(
      act(
        async (
          run,
          kid: string,
          opts: { reason: string; dryRun?: boolean; yes?: boolean; wait?: boolean },
        ) => {
          const { io } = run;
          const call = (dryRun: boolean) =>
            run.client.call<Plan>('POST', '/admin/keys/compromised', {
              body: { kid, reason: opts.reason, dryRun },
            });
          const { body: plan } = await call(true);
          const steps = [
            plan.active
              ? `rotate away from ${kid} (it signs new credentials now)`
              : `${kid} no longer signs new credentials`,
            `stop publishing ${kid} at once (jwt-vc-issuer, did.json, x5c chains)${plan.alreadyCompromised ? '; already so' : ''}`,
            `revoke the ${plan.credentials} credential(s) it signed, as one bulk job`,
          ];
          if (opts.dryRun) {
            if (run.json) io.out(json({ ...plan, dryRun: true }));
            else if (plan.rotationRefused)
              io.out(`would stop: ${plan.rotationRefused}; nothing would change`);
            else for (const s of steps) io.out(`would ${s}`);
            return 0;
          }
          if (plan.rotationRefused) {
            // The server would answer 409 before changing anything; say why without asking.
            if (run.json)
              io.out(json({ error: { status: 409, code: 'CONFLICT', message: plan.rotationRefused } }));
            else io.err(`cannot run: ${plan.rotationRefused}; nothing changed`);
            return 1;
          }
          if (!run.json) for (const s of steps) io.err(`will ${s}`);
          if (!(await confirm(run, `Declare ${kid} compromised?`, opts.yes))) {
            io.err('not confirmed; nothing changed');
            return 1;
          }
          const { body: done } = await call(false);
          if (!run.json)
            io.err(
              `${kid}: compromised, no longer published${done.rotatedTo ? `; new signing key ${done.rotatedTo}` : ''}; revocation job ${done.jobId}`,
            );
          if (opts.wait === false) {
            if (run.json) io.out(json(done));
            else
              io.out(`job ${done.jobId} started; follow it with: npm run admin -- status job ${done.jobId}`);
            return 0;
          }
          const job = await followJob(run, done.jobId!);
          if (run.json) {
            io.out(json({ ...done, job }));
            return job.state === 'done' && job.failed === 0 ? 0 : 1;
          }
          return reportJob(run, job);
        },
      ),
    );
}
