import { Option } from 'commander';
import type { RegisterCommand } from './command.js';
import { UsageError } from './command.js';

export const dbCommand: RegisterCommand = (program, act) => {
  const db = program
    .command('db')
    .description('database maintenance run on this machine (not over the server)');
  db.command('copy')
    .description(
      'copy a SQLite deployment into an empty PostgreSQL database (every table), verifying row counts and a sha256 per table',
    )
    .addOption(new Option('--from <url>', 'the SQLite database (sqlite:<path>; default DATABASE_URL)'))
    .addOption(new Option('--to <url>', 'the empty PostgreSQL database (postgres://…)').makeOptionMandatory())
    .action(
      act(async (run, opts: { from?: string; to: string }) => {
        const from = opts.from ?? run.settings.databaseUrl;
        // Loaded here: only this command needs both drivers.
        const { copyDatabase, CopyFailed, CopyRefused, reportLine } = await import(
          '../../store/copy-database.js'
        );
        let result: Awaited<ReturnType<typeof copyDatabase>>;
        try {
          result = await copyDatabase(from, opts.to, { cwd: run.settings.cwd });
        } catch (err) {
          if (err instanceof CopyRefused || err instanceof CopyFailed)
            throw new UsageError(`db copy: ${err.message}`);
          throw err;
        }
        if (run.json) run.io.out(JSON.stringify(result));
        else {
          run.io.out(`${result.source} -> ${result.target}`);
          for (const table of result.tables) run.io.out(reportLine(table));
          if (result.ok)
            run.io.out(
              'committed. Keys are not in the SQLite database: start the first PostgreSQL instance with the same KEYS_DIR and a KEY_ENCRYPTION_KEY; it imports the signing and partner keys and the Iden3 key (sealed) into issuer_keys and iden3_key; the other instances need no KEYS_DIR.',
            );
          else
            run.io.err(
              `db copy: verification failed (${result.tables
                .filter((t) => !t.ok)
                .map((t) => t.table)
                .join(', ')}); rolled back, the target database is unchanged`,
            );
        }
        return result.ok ? 0 : 1;
      }),
    );
};
