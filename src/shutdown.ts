import type { Logger } from './model.js';

/**
 * On SIGTERM or SIGINT, once: log the shutdown, `close` (the drain, docs/operations.md
 * "Shutdown"), then exit 0, or 1 when closing fails. The backstop: whatever still holds the
 * drain one second past the grace, the process ends with 1.
 */
export function stopOnSignals(log: Logger, graceMs: number, close: () => Promise<unknown>): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ event: 'shutdown', signal, graceMs }, 'shutting down');
    setTimeout(() => {
      log.error({ event: 'shutdown_overrun', graceMs }, 'drain overran its grace; exiting');
      process.exit(1);
    }, graceMs + 1000).unref();
    close().then(
      () => {
        log.info({ event: 'stopped' }, 'stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.fatal({ event: 'shutdown_failed', err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
