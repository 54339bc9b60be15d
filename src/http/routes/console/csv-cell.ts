/**
 * A CSV cell a spreadsheet would run as a formula starts with `=`, `+`, `-`, `@`, a tab or a
 * carriage return (OWASP "CSV Injection"): such a cell is written with a leading `'`, which the
 * spreadsheet shows as text. Used as csv-stringify's `cast.string`.
 */
export const neutraliseFormula = (value: string): string =>
  /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
