import { callAndPrint, type RegisterCommand, UsageError } from './command.js';

export const uploadsCommand: RegisterCommand = (program, act) => {
  const uploads = program.command('uploads').description('uploads to the hosting service (the outbox)');
  uploads
    .command('retry')
    .description('queue failed uploads again (POST /admin/uploads/retry); see history --status upload_failed')
    .argument('[credentialId]', '(required, or --all-failed) the credential whose upload failed')
    .option('--all-failed', '(required, or a credentialId) every failed upload')
    .action(
      act(async (run, credentialId: string | undefined, opts: { allFailed?: boolean }) => {
        if ((credentialId === undefined) === (opts.allFailed !== true))
          throw new UsageError(
            credentialId === undefined
              ? 'uploads retry: give a credentialId or --all-failed'
              : 'uploads retry: give a credentialId or --all-failed, not both',
          );
        const body = await callAndPrint<{ retried: string[] }>(
          run,
          'POST',
          '/admin/uploads/retry',
          ({ retried }) =>
            retried.length === 0
              ? credentialId
                ? `${credentialId}: not a failed upload`
                : 'no failed uploads'
              : [...retried.map((id) => `${id}: queued again`), `${retried.length} upload(s) queued again`],
          { body: credentialId === undefined ? { allFailed: true } : { credentialId } },
        );
        // Nothing to retry for a named credential is a failure (a typo should not pass silently).
        return credentialId !== undefined && body.retried.length === 0 ? 1 : 0;
      }),
    );
};
