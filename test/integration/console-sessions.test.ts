import { hash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { queryStore, startIssuer, TEST_ADMIN_API_KEY, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

const postgres = await postgresAvailable('console sessions on PostgreSQL');
const engines = postgres ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);

const BOB_KEY = 'ops-bob-key-0123456789abcdef0123456789ab';
const CAROL_KEY = 'ops-carol-key-0123456789abcdef0123456789';
const NEW_ADMIN_KEY = 'new-admin-key-0123456789abcdef0123456789';

// docs/operations.md "The admin console": a session ends when the admin key that opened it is no
// longer configured; `admin console sessions list|end` shows and ends them.
describe.each(engines)('console sessions and their keys (%s)', (engine) => {
  let issuer: TestIssuer | undefined;
  let db: TempDatabase | undefined;
  const dir = tempDir();
  afterAll(async () => {
    await issuer?.close();
    await db?.drop();
  });

  const start = async (env: Record<string, string>, port?: number) => {
    db ??= engine === 'postgres' ? await createMigratedDatabase() : undefined;
    issuer = await startIssuer({
      dir,
      ...(port === undefined ? {} : { port }),
      env: { ...env, ...(db ? { DATABASE_URL: db.url } : {}) },
    });
    return issuer;
  };
  const signIn = async (key: string) => {
    const res = await fetch(`${issuer!.url}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: issuer!.url },
      body: new URLSearchParams({ key }),
    });
    expect(res.status).toBe(303);
    return res.headers.get('set-cookie')!.split(';')[0]!;
  };
  /** A page and a change with the session: 200 and the change's answer, or the sign-in redirect and 401. */
  const use = async (cookie: string) => {
    const page = await fetch(`${issuer!.url}/console/keys`, { headers: { cookie }, redirect: 'manual' });
    const text = await page.text();
    const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(text)?.[1] ?? 'none';
    const change = await fetch(`${issuer!.url}/console/api/admin/schemas/reload`, {
      method: 'POST',
      headers: { cookie, origin: issuer!.url, 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify({ reason: 'check' }),
    });
    return { page: page.status, change: change.status };
  };
  const cli = (args: string[], adminKey = TEST_ADMIN_API_KEY) =>
    runCli(args, { ISSUER_URL: issuer!.url, ADMIN_API_KEY: adminKey }, dir);
  const listed = async (adminKey?: string) => {
    const run = await cli(['console', 'sessions', 'list', '--json'], adminKey);
    expect(run.code).toBe(0);
    return (JSON.parse(run.stdout) as { sessions: Array<{ id: string; actor: string }> }).sessions;
  };

  it('a removed ADMIN_API_KEYS entry or a changed ADMIN_API_KEY ends the sessions it opened, after a restart; the others go on', async () => {
    await start({ ADMIN_API_KEYS: `ops-bob:${BOB_KEY},ops-carol:${CAROL_KEY}` });
    const bob = await signIn(BOB_KEY);
    const carol = await signIn(CAROL_KEY);
    const admin = await signIn(TEST_ADMIN_API_KEY);
    for (const cookie of [bob, carol, admin]) expect(await use(cookie)).toEqual({ page: 200, change: 200 });
    expect((await listed()).map((s) => s.actor).sort()).toEqual(['admin', 'ops-bob', 'ops-carol']);

    // ops-bob's entry removed and ADMIN_API_KEY changed: only ops-carol's session is still live.
    const port = Number(new URL(issuer!.url).port);
    await issuer!.close();
    await start({ ADMIN_API_KEY: NEW_ADMIN_KEY, ADMIN_API_KEYS: `ops-carol:${CAROL_KEY}` }, port);
    expect((await listed(NEW_ADMIN_KEY)).map((s) => s.actor)).toEqual(['ops-carol']);
    for (const cookie of [bob, admin]) expect(await use(cookie)).toEqual({ page: 303, change: 401 });
    expect(await use(carol)).toEqual({ page: 200, change: 200 });
    // The ended sessions are gone from the database, not only refused.
    const rows = await queryStore<{ actor: string }>(issuer!.ctx.store, 'SELECT actor FROM console_sessions');
    expect(rows.map((r) => r.actor)).toEqual(['ops-carol']);
  });

  it('`console sessions end <id>` ends that session at once; an unknown id is 404 and exits 1', async () => {
    const other = (await listed(NEW_ADMIN_KEY)).map((s) => s.id);
    const carol = await signIn(CAROL_KEY);
    // The id listed is the SHA-256 of the cookie's value, the one thing the database keeps of it.
    const id = hash('sha256', carol.split('=')[1]!, 'hex');
    expect((await listed(NEW_ADMIN_KEY)).map((s) => s.id).sort()).toEqual([...other, id].sort());
    const ended = await cli(['console', 'sessions', 'end', id], NEW_ADMIN_KEY);
    expect(ended.code).toBe(0);
    expect(ended.stdout).toContain(`${id}: ended`);
    expect(await use(carol)).toEqual({ page: 303, change: 401 });
    expect((await listed(NEW_ADMIN_KEY)).map((s) => s.id)).toEqual(other);

    const again = await cli(['console', 'sessions', 'end', id], NEW_ADMIN_KEY);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('NOT_FOUND');
    const malformed = await cli(['console', 'sessions', 'end', 'not-an-id'], NEW_ADMIN_KEY);
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toContain('INVALID_PARAMETER');
    const audit = await queryStore<{ actor: string; target: string }>(
      issuer!.ctx.store,
      "SELECT actor, target FROM audit_log WHERE action = 'console.session-end'",
    );
    expect(audit).toEqual([{ actor: 'admin', target: id }]);
  });
});
