import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTempDatabase } from '../../test/helpers/services.js';
import { removeDir, tempDir } from '../../test/helpers/tmp.js';
import { benchHostedIssueVc } from './hosted.js';
import type { Row } from './issuance.js';

const ROOT = resolve(fileURLToPath(import.meta.url), '../../..');

/**
 * The commit before the shape work (formats/, oid4vci/, IssuerIdentity, events/, store parts): the
 * base the seams are measured against. `BENCH_SEAMS_BASE` names another commit.
 */
const SHAPE_BASE = '292459f';

const FIGURES = ['server CPU per issuance', 'PostgreSQL backend CPU per issuance'] as const;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The base commit's source in a folder of its own, running on this checkout's node_modules. */
function checkoutBase(commit: string): string {
  const dir = join(tempDir(), 'base');
  mkdirSync(dir);
  const archive = execFileSync('git', ['archive', '--format=tar', commit], { cwd: ROOT, maxBuffer: 1 << 30 });
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  if (!existsSync(join(dir, 'node_modules')))
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/**
 * Hosted issue-vc on PostgreSQL (one process), this checkout and the base commit alternated in one
 * run (base, head, head, base, …), each window on a database of its own: the seams' cost is the
 * median of head ÷ the median of base, for the server's CPU and PostgreSQL's backends' CPU per
 * issuance. The machine's other load weighs on both alike.
 */
export async function benchSeams(): Promise<Row[]> {
  const commit = process.env.BENCH_SEAMS_BASE || SHAPE_BASE;
  const rounds = Number(process.env.BENCH_SEAMS_ROUNDS || 3);
  const baseDir = checkoutBase(commit);
  const rows: Row[] = [];
  const seen = {
    base: new Map<string, number[]>(FIGURES.map((f) => [f, []])),
    head: new Map<string, number[]>(FIGURES.map((f) => [f, []])),
  };
  try {
    for (let round = 1; round <= rounds; round++) {
      const order = round % 2 ? (['base', 'head'] as const) : (['head', 'base'] as const);
      for (const side of order) {
        const db = await createTempDatabase(process.env.BENCH_DATABASE_URL || undefined);
        try {
          const got = await benchHostedIssueVc({
            databaseUrl: db.url,
            kitDir: side === 'base' ? baseDir : undefined,
            tag: `seams ${side === 'base' ? `base ${commit}` : 'head'} #${round}`,
          });
          rows.push(...got);
          for (const figure of FIGURES) {
            const row = got.find((r) => r.name.endsWith(`: ${figure}`));
            if (row) seen[side].get(figure)!.push(row.value);
          }
        } finally {
          await db.drop();
        }
      }
    }
  } finally {
    removeDir(join(baseDir, '..'));
  }
  for (const figure of FIGURES) {
    const base = seen.base.get(figure)!;
    const head = seen.head.get(figure)!;
    if (base.length === 0 || head.length === 0) continue;
    rows.push(
      { name: `seams: ${figure}, median base ${commit}`, value: median(base), unit: 'ms' },
      { name: `seams: ${figure}, median head`, value: median(head), unit: 'ms' },
      { name: `seams: ${figure}, head ÷ base`, value: median(head) / median(base), unit: '×' },
    );
  }
  return rows;
}
