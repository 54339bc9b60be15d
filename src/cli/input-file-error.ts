/**
 * A problem in an input file (src/cli/csv-input.ts), apart from the CSV reader so that the CLI's
 * error report does not load it at every start.
 */

/** A problem in an input file, by the 1-based line it starts on (the header is line 1). */
export interface LineProblem {
  line: number;
  field: string;
  message: string;
}

export class InputFileError extends Error {
  override name = 'InputFileError';
  constructor(readonly problems: LineProblem[]) {
    super(problems.map((p) => `line ${p.line}: ${p.field}: ${p.message}`).join('\n'));
  }
}
