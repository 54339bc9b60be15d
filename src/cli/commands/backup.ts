import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { RegisterCommand } from './command.js';
import { UsageError } from './command.js';

export const backupCommand: RegisterCommand = (program, act) => {
  program
    .command('backup')
    .description('a consistent copy of the SQLite database, taken while the server runs (DATABASE_URL)')
    .argument('<file>', 'where to write the copy (must not exist)')
    .action(
      act(async (run, file: string) => {
        const url = run.settings.databaseUrl;
        if (/^postgres(ql)?:/.test(url))
          throw new UsageError(
            'backup: DATABASE_URL is PostgreSQL; back it up with pg_dump (e.g. pg_dump --format=custom "$DATABASE_URL" > issuer.dump)',
          );
        if (!url.startsWith('sqlite:')) throw new UsageError('backup: DATABASE_URL must be sqlite:<path>');
        const rest = url.slice('sqlite:'.length);
        const source = resolve(rest.startsWith('//') ? rest.slice(2) : rest);
        if (!existsSync(source)) throw new UsageError(`backup: no database at ${source} (DATABASE_URL)`);
        const target = resolve(file);
        if (existsSync(target)) throw new UsageError(`backup: ${target} exists; choose a new file`);
        // Loaded here: only this command needs the driver. The online backup API copies page by
        // page and restarts when the server writes meanwhile, so the copy is one consistent state.
        const { backupSqlite } = await import('../../store/sqlite/backup.js');
        const pages = await backupSqlite(source, target);
        if (run.json) run.io.out(JSON.stringify({ source, target, pages }));
        else run.io.out(`backed up ${source} to ${target} (${pages} pages, mode 0600)`);
        return 0;
      }),
    );
};
