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

/** The geometric mean: the mean of ratios that a factor moves up in one case and down in the other. */
function geometricMean(values: number[]): number {
  return Math.exp(values.reduce((sum, v) => sum + Math.log(v), 0) / values.length);
}

type Side = 'base' | 'head';

/**
 * Hosted issue-vc on PostgreSQL (one process), this checkout and the base commit alternated in one
 * run, ABBA (base, head | head, base | …), each window on a database of its own. The rounds are
 * made even, so that each side runs first as often as second: a window that costs more for its
 * place in the round (first or second) weighs on both sides alike. Per figure (the server's CPU,
 * PostgreSQL's backends' CPU per issuance) it reports the medians and their ratio, head ÷ base of
 * each round by the order it ran in, and the balanced ratio: the geometric mean of every round's
 * head ÷ base, in which a factor that an order multiplies one side by cancels out.
 */
export async function benchSeams(): Promise<Row[]> {
  const commit = process.env.BENCH_SEAMS_BASE || SHAPE_BASE;
  const asked = Number(process.env.BENCH_SEAMS_ROUNDS || 4);
  const rounds = Math.max(2, asked + (asked % 2));
  const baseDir = checkoutBase(commit);
  const rows: Row[] = [];
  /** Per figure, per round: each side's value, and which side ran first. */
  const seen = new Map<string, Array<{ first: Side; base?: number; head?: number }>>(
    FIGURES.map((f) => [f, []]),
  );
  try {
    for (let round = 1; round <= rounds; round++) {
      const order: readonly Side[] = round % 2 ? ['base', 'head'] : ['head', 'base'];
      const figures = new Map(
        FIGURES.map((f) => [f, { first: order[0]! } as { first: Side; base?: number; head?: number }]),
      );
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
            if (row) figures.get(figure)![side] = row.value;
          }
        } finally {
          await db.drop();
        }
      }
      for (const figure of FIGURES) seen.get(figure)!.push(figures.get(figure)!);
    }
  } finally {
    removeDir(join(baseDir, '..'));
  }
  for (const figure of FIGURES) {
    const all = seen.get(figure)!;
    const base = all.flatMap((r) => (r.base === undefined ? [] : [r.base]));
    const head = all.flatMap((r) => (r.head === undefined ? [] : [r.head]));
    if (base.length === 0 || head.length === 0) continue;
    rows.push(
      { name: `seams: ${figure}, median base ${commit}`, value: median(base), unit: 'ms' },
      { name: `seams: ${figure}, median head`, value: median(head), unit: 'ms' },
      { name: `seams: ${figure}, head ÷ base`, value: median(head) / median(base), unit: '×' },
    );
    const ratios = (first?: Side) =>
      all.flatMap((r) =>
        r.base !== undefined && r.head !== undefined && (first === undefined || r.first === first)
          ? [r.head / r.base]
          : [],
      );
    for (const first of ['base', 'head'] as const) {
      const some = ratios(first);
      if (some.length > 0)
        rows.push({
          name: `seams: ${figure}, head ÷ base in the rounds ${first} ran first`,
          value: geometricMean(some),
          unit: '×',
        });
    }
    const every = ratios();
    if (every.length > 0)
      rows.push({
        name: `seams: ${figure}, head ÷ base, order balanced`,
        value: geometricMean(every),
        unit: '×',
      });
  }
  return rows;
}
