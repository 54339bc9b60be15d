/**
 * `npm run bench`: speed figures from one run, each next to the raw primitive measured in the
 * same run (issue: "Speed is measured, not asserted"). Sections: `npm run bench -- http status`.
 */
import { benchBatch } from './bench/batch.js';
import { benchIden3 } from './bench/iden3.js';
import { benchHttpIssueVc, benchPrimitives, type Row } from './bench/issuance.js';
import { benchStatusList } from './bench/status-list.js';

const sections: Record<string, () => Promise<Row[]>> = {
  primitives: benchPrimitives,
  http: () => benchHttpIssueVc(),
  status: benchStatusList,
  iden3: benchIden3,
  batch: () => benchBatch(),
};
const chosen = process.argv.slice(2).filter((a) => a in sections);
const rows: Row[] = [];
for (const name of chosen.length > 0 ? chosen : Object.keys(sections)) {
  process.stdout.write(`${name}…\n`);
  const got = await sections[name]!();
  rows.push(...got);
  for (const r of got) console.log(`  ${r.name.padEnd(58)} ${fmt(r.value).padStart(12)} ${r.unit}`);
}

const get = (prefix: string) => rows.find((r) => r.name.startsWith(prefix))?.value;
const http = get('issue-vc over HTTP');
const stages = ['bare ES256 signs/s', 'SD-JWT VC issues/s', 'envelope seals/s']
  .map((n) => [n, get(n)] as const)
  .filter(([, v]) => v !== undefined);
if (http !== undefined && stages.length > 0) {
  console.log('\nratios (same run)');
  const slowest = stages.reduce((a, b) => (b[1]! < a[1]! ? b : a));
  for (const [name, v] of stages) console.log(`  issue-vc/s ÷ ${name.padEnd(40)} ${(http / v!).toFixed(3)}`);
  console.log(`  issue-vc/s ÷ slowest stage (${slowest[0]}) ${(http / slowest[1]!).toFixed(3)}`);
}

function fmt(v: number): string {
  return v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(2);
}
