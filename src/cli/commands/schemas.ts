import { dirname, resolve } from 'node:path';
import { IssuerUrls } from '../../identity/issuer-identity.js';
import { AdminApiError } from '../admin-client.js';
import { json } from '../output.js';
import type { RegisterCommand } from './command.js';

type Problem = { file: string; message: string };
type Described = { schemaId: string; proofTypes: string[]; vct: string; file: string };

export const schemasCommand: RegisterCommand = (program, act) => {
  const schemas = program
    .command('schemas')
    .description('check a schema file offline; make the server read SCHEMAS_DIR again');

  schemas
    .command('validate <file>')
    .description(
      'load one schema file as the server would (zod, Ajv, the claims module, the Iden3 JSON-LD context): one line per problem; exit 1 on any',
    )
    .option(
      '--schemas-dir <dir>',
      "the folder its relative paths (iden3.contextFile, claims.path) are read from (default: the file's own)",
    )
    .action(
      act(async (run, file: string, opts: { schemasDir?: string }) => {
        // Loaded here: Ajv and the Iden3 libraries are heavy, and only this command needs them.
        const [
          { loadSchemaFile, SchemaFileError, schemaFileParts },
          { iden3ContextProblems },
          { loadModuleClaimsProvider },
          { formatOf },
        ] = await Promise.all([
          import('../../formats/schema-file.js'),
          import('../../formats/iden3-bjj/iden3-bjj-issuer.js'),
          import('../../claims/module-claims-provider.js'),
          import('../../formats/index.js'),
        ]);
        const path = resolve(run.settings.cwd, file);
        const dir = resolve(run.settings.cwd, opts.schemasDir ?? dirname(path));
        // The origin only shapes the default vct shown.
        const origin = run.settings.env.ISSUER_ORIGIN || 'http://localhost:3000';
        const problems: Problem[] = [];
        let described: Described | undefined;
        // What each format adds to the line (SD-JWT VC: the vct).
        let notes: string[] = [];
        try {
          const schema = loadSchemaFile(path, new IssuerUrls(origin));
          notes = schema.proofTypes.flatMap((p) => formatOf(p).describeSchema?.(schema) ?? []);
          described = {
            schemaId: schema.schemaId,
            proofTypes: schema.proofTypes,
            vct: schema.sdJwt.vct,
            file: path,
          };
        } catch (err) {
          if (!(err instanceof SchemaFileError)) throw err;
          problems.push(...err.problems);
        }
        // The claims module and the Iden3 context are checked whatever else fails, so one run
        // names every problem (docs/schemas-and-claims.md "Reloading schemas").
        const parts = schemaFileParts(path);
        if (parts.iden3) problems.push(...iden3ContextProblems([{ file: path, iden3: parts.iden3 }], dir));
        if (parts.claims?.provider === 'module') {
          await loadModuleClaimsProvider(parts.claims.path, dir, path).catch((err: Error) => {
            problems.push({ file: path, message: err.message.replace(`${path}: `, '') });
          });
        }
        const ok = problems.length === 0;
        if (run.json) run.io.out(json({ ok, problems, ...(ok ? { schema: described } : {}) }));
        else if (ok && described)
          run.io.out(
            `ok  ${described.file}: ${described.schemaId} (${described.proofTypes.join(', ')})${notes.map((n) => `, ${n}`).join('')}`,
          );
        else for (const p of problems) run.io.err(`${p.file}: ${p.message}`);
        return ok ? 0 : 1;
      }),
    );

  schemas
    .command('reload')
    .description(
      'POST /admin/schemas/reload: the server reads SCHEMAS_DIR again; with a bad file it keeps its set and each problem is printed (exit 1)',
    )
    .option('--reason <text>', 'why (kept in the audit log)')
    .action(
      act(async (run, opts: { reason?: string }) => {
        try {
          const { body } = await run.client.call<{ schemas: Described[] }>('POST', '/admin/schemas/reload', {
            body: opts.reason ? { reason: opts.reason } : {},
          });
          if (run.json) run.io.out(json({ ok: true, schemas: body.schemas }));
          else
            for (const s of body.schemas) run.io.out(`${s.schemaId}  ${s.proofTypes.join(',')}  ${s.file}`);
          return 0;
        } catch (err) {
          if (!(err instanceof AdminApiError) || err.code !== 'SCHEMAS_INVALID') throw err;
          const details = err.details as { problems: Problem[]; schemas: Described[] };
          if (run.json) run.io.out(json({ ok: false, ...details }));
          else {
            for (const p of details.problems) run.io.err(`${p.file}: ${p.message}`);
            run.io.err(
              `the server keeps its ${details.schemas.length} schema(s): ${details.schemas.map((s) => s.schemaId).join(', ')}`,
            );
          }
          return 1;
        }
      }),
    );
};
