import { setTimeout as delay } from 'node:timers/promises';
import { type Command, Option } from 'commander';
import { AdminApiError } from '../admin-client.js';
import { json } from '../output.js';
import { type Act, positiveInt, type Run, UsageError, withFlags } from './command.js';

/** `GET /admin/status-changes/:jobId`. */
export interface JobAnswer {
  jobId: string;
  change: string;
  state: 'running' | 'done' | 'failed';
  total: number;
  done: number;
  failed: number;
  error?: string;
}

/** The selector flags and the body field each one sets. */
const SELECTOR_FLAGS: Array<[flag: string, field: string, description: string]> = [
  ['--schema <schemaId>', 'schemaId', 'credentials of this schema'],
  ['--holder <did>', 'holderDid', 'credentials of this holder DID'],
  ['--email <address>', 'email', 'direct issuances to this email'],
  ['--batch <batchId>', 'batchId', 'credentials of this batch-issue run (it prints its id)'],
  ['--kid <kid>', 'kid', 'credentials signed with this key'],
  ['--issued-after <date-time>', 'issuedAfter', 'issued at or after (ISO 8601 with an offset)'],
  ['--issued-before <date-time>', 'issuedBefore', 'issued before (ISO 8601 with an offset)'],
];
const FLAG_OF = new Map(SELECTOR_FLAGS.map(([flag, field]) => [`selector.${field}`, flag.split(' ')[0]!]));
FLAG_OF.set('selector.credentialIds', '--id');

/**
 * Asks on the terminal; without one (a script) only `--yes` confirms, so nothing irreversible runs
 * unattended by accident.
 */
export async function confirm(_run: Run, question: string, yes: boolean | undefined): Promise<boolean> {
  if (yes) return true;
  if (!process.stdin.isTTY) throw new UsageError('not confirmed: run it on a terminal, or pass --yes');
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

/**
 * Follows a job until it ends, with a bar on a terminal (a line every 5 % otherwise); answers the
 * job as it ended.
 */
export async function followJob(run: Run, jobId: string, pollMs = 500): Promise<JobAnswer> {
  const { client, io } = run;
  const get = async () =>
    (await client.call<JobAnswer>('GET', `/admin/status-changes/${encodeURIComponent(jobId)}`)).body;
  let job = await get();
  // Loaded only when a bar is drawn: the CLI starts without it (docs/admin-cli.md).
  const bar =
    io.errIsTTY && !run.json
      ? new (await import('cli-progress')).SingleBar({
          stream: io.errStream,
          format: '{bar} {percentage}% | {value}/{total} credentials | failed {failed}',
          hideCursor: true,
        })
      : undefined;
  bar?.start(job.total, job.done + job.failed, { failed: job.failed });
  let lastStep = -1;
  try {
    while (job.state === 'running') {
      await delay(pollMs);
      job = await get();
      const worked = job.done + job.failed;
      if (bar) bar.update(worked, { failed: job.failed });
      else if (!run.json && job.total > 0) {
        const step = Math.floor((worked / job.total) * 20);
        if (step !== lastStep) io.err(`${worked}/${job.total} credentials, failed ${job.failed}`);
        lastStep = step;
      }
    }
    bar?.update(job.done + job.failed, { failed: job.failed });
  } finally {
    bar?.stop();
  }
  return job;
}

/** Prints a job as it ended; exit 0 only when it is done without failures. */
export function reportJob(run: Run, job: JobAnswer): number {
  if (run.json) run.io.out(json(job));
  else
    run.io.out(
      `job ${job.jobId}: ${job.state}; ${job.done} of ${job.total} done, ${job.failed} failed${job.error ? ` (${job.error})` : ''}`,
    );
  return job.state === 'done' && job.failed === 0 ? 0 : 1;
}

/** Starts a bulk job (after a dry run and the confirmation) and follows it. */
export async function startBulk(
  run: Run,
  body: { change: string; selector: Record<string, unknown>; reason: string },
  options: { dryRun?: boolean; yes?: boolean; wait?: boolean; describe: string },
): Promise<number> {
  const { client, io } = run;
  const post = async (dryRun: boolean) => {
    try {
      return await client.call<{ count: number; jobId?: string }>('POST', '/admin/status-changes', {
        body: { ...body, dryRun },
      });
    } catch (err) {
      if (err instanceof AdminApiError) throw withFlags(err, (f) => FLAG_OF.get(f) ?? `--${f}`);
      throw err;
    }
  };
  const { body: dry } = await post(true);
  if (options.dryRun) {
    if (run.json) io.out(json({ dryRun: true, count: dry.count }));
    else io.out(`${options.describe}: ${dry.count} credential(s) match; nothing changed (dry run)`);
    return 0;
  }
  if (
    !(await confirm(run, `${options.describe}: ${dry.count} credential(s) now match. Go on?`, options.yes))
  ) {
    io.err('not confirmed; nothing changed');
    return 1;
  }
  const { body: started } = await post(false);
  const jobId = started.jobId!;
  if (!run.json) io.err(`job ${jobId}: ${started.count} credential(s)`);
  if (options.wait === false) {
    if (run.json) io.out(json({ jobId, count: started.count }));
    else io.out(`job ${jobId} started; follow it with: npm run admin -- status job ${jobId}`);
    return 0;
  }
  return reportJob(run, await followJob(run, jobId));
}

/** `status bulk <change>` and `status job <jobId>`, under the `status` command. */
export function addStatusBulkCommands(status: Command, act: Act): void {
  const bulk = status
    .command('bulk')
    .description(
      'revoke, suspend or unsuspend every credential a selector matches, as one job (POST /admin/status-changes)',
    )
    .addOption(
      new Option('--reason <text>', 'why (kept in the audit log with each change)').makeOptionMandatory(),
    )
    .argument('<change>', 'revoke | suspend | unsuspend');
  for (const [flag, , description] of SELECTOR_FLAGS) bulk.option(flag, description);
  bulk
    .option('--id <credentialId...>', 'these credentials (at most 10,000)')
    .option('--dry-run', 'count what matches; change nothing')
    .option('--yes', 'do not ask for confirmation (scripts)')
    .option('--no-wait', 'print the job id and return at once')
    .action(
      act(async (run, change: string, opts: Record<string, unknown>) => {
        if (!['revoke', 'suspend', 'unsuspend'].includes(change))
          throw new UsageError('change: must be one of revoke, suspend, unsuspend');
        const selector: Record<string, unknown> = {};
        for (const [flag, field] of SELECTOR_FLAGS) {
          const key = flag
            .split(' ')[0]!
            .slice(2)
            .replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
          if (opts[key] !== undefined) selector[field] = opts[key];
        }
        if (opts.id !== undefined) selector.credentialIds = opts.id;
        return startBulk(
          run,
          { change, selector, reason: String(opts.reason) },
          {
            dryRun: opts.dryRun === true,
            yes: opts.yes === true,
            wait: opts.wait !== false,
            describe: `${change} ${JSON.stringify(selector)}`,
          },
        );
      }),
    );

  status
    .command('job')
    .description('a bulk status change job: state, total, done, failed (GET /admin/status-changes/:jobId)')
    .argument('<jobId>', 'the id `status bulk` printed')
    .option('--follow', 'wait for the job to end, with a progress bar')
    .option('--poll-ms <ms>', 'how often --follow looks', positiveInt(60_000), 500)
    .action(
      act(async (run, jobId: string, opts: { follow?: boolean; pollMs: number }) => {
        if (opts.follow) return reportJob(run, await followJob(run, jobId, opts.pollMs));
        const { body } = await run.client.call<JobAnswer>(
          'GET',
          `/admin/status-changes/${encodeURIComponent(jobId)}`,
        );
        if (run.json) run.io.out(json(body));
        else reportJob(run, body);
        return 0;
      }),
    );
}
