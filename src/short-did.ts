/**
 * A holder DID shortened to what fits a terminal column or a narrow table cell: its method prefix
 * and its end, as people compare them. The admin CLI's history and the console's Issuances table
 * show the same form (docs/operations.md "The admin console"); the full DID stays beside it.
 */
export const shortDid = (did: string): string =>
  did.length > 24 ? `${did.slice(0, 8)}…${did.slice(-12)}` : did;
