/** A page of a keyset-paged admin list (docs/interface.md "Paging"). */
export interface KeysetPage<T> {
  data: T[];
  pagination: { page?: number; limit: number; total?: number; nextCursor: string | null };
}

/**
 * Every page of a list, walked by cursor: each page costs the same however far it is, and records
 * added while walking neither repeat nor shift one (docs/interface.md "Paging"). Answers one page
 * holding them all.
 */
export async function walkAllPages<T>(
  fetchPage: (at: { cursor?: string }) => Promise<KeysetPage<T>>,
): Promise<KeysetPage<T>> {
  const data: T[] = [];
  let cursor: string | null | undefined;
  do {
    const answer = await fetchPage(cursor ? { cursor } : {});
    data.push(...answer.data);
    cursor = answer.pagination.nextCursor;
  } while (cursor);
  return { data, pagination: { page: 1, limit: data.length, total: data.length, nextCursor: null } };
}
