/** An ADMIN_API_KEYS entry: the name is the actor in the audit log. */
export interface NamedKey {
  name: string;
  key: string;
}

/** `name:key,…` (names of letters, digits, `-`, `_`); problems name the entry, never the key. */
export function parseNamedKeys(value: string | undefined, problems: string[]): NamedKey[] {
  if (value === undefined) return [];
  const keys: NamedKey[] = [];
  value.split(',').forEach((entry, i) => {
    const at = entry.indexOf(':');
    const name = at < 0 ? '' : entry.slice(0, at).trim();
    const key = at < 0 ? '' : entry.slice(at + 1).trim();
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(name) || key === '')
      problems.push(`ADMIN_API_KEYS: entry ${i + 1} must be name:key (name of letters, digits, - and _)`);
    else if (keys.some((k) => k.name === name))
      problems.push(`ADMIN_API_KEYS: the name ${name} appears twice`);
    else if (keys.some((k) => k.key === key))
      problems.push(`ADMIN_API_KEYS (${name}): the same key as another name`);
    else keys.push({ name, key });
  });
  return keys;
}
