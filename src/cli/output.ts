/** Where the CLI writes: results on stdout, progress and diagnostics on stderr. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** The stream a progress bar may redraw in place. */
  errStream: NodeJS.WritableStream;
  errIsTTY: boolean;
  /** stdout is a terminal (unset: not one): a QR code is drawn only there, never into a file or a pipe. */
  outIsTTY?: boolean;
}

export const processIo: CliIo = {
  out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
  errStream: process.stderr,
  errIsTTY: process.stderr.isTTY === true,
  outIsTTY: process.stdout.isTTY === true,
};

export const json = (value: unknown): string => JSON.stringify(value, null, 2);

/** A plain text table with a header row; cells are shown as given (null → '-'). */
export function table(rows: Array<Record<string, unknown>>, columns: string[]): string {
  const text = (v: unknown) => (v === null || v === undefined ? '-' : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => text(r[c]).length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns), ...rows.map((r) => line(columns.map((c) => text(r[c]))))].join('\n');
}
