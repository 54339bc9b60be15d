export const DEFAULT_DATABASE_URL = 'sqlite:./data/issuer.db';

/** The URL without its password, for logs and the printable config. */
export function redactDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    // libpq also takes the password as a query parameter (`?password=`).
    for (const name of [...u.searchParams.keys()])
      if (name.toLowerCase() === 'password') u.searchParams.set(name, '***');
    return u.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//***@');
  }
}
