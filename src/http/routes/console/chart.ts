import type { HourlyIssuances } from '../../../store/store.js';
import { type Html, html } from './html.js';

const HOUR_MS = 3_600_000;
/** Fill of each series, distinguishable without colour too (the table below the chart says it in text). */
const COLOURS = ['#1f5fbf', '#d9822b', '#2e8540', '#8c3cb4'];

/**
 * Issuances per hour for the 24 hours before `now`, one stacked bar per hour and a band per channel
 * and proof type, as SVG drawn here (presentation attributes only: the CSP allows no inline style).
 * A table with the same numbers follows for screen readers and for reading exact values.
 */
export function hourlyChart(rows: HourlyIssuances[], now: Date): Html {
  const first = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS - 23 * HOUR_MS;
  const hours = Array.from({ length: 24 }, (_, i) =>
    new Date(first + i * HOUR_MS).toISOString().slice(0, 13),
  );
  const series = [...new Set(rows.map((r) => `${r.channel} · ${r.proofType}`))].sort();
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(`${r.hour}|${r.channel} · ${r.proofType}`, r.count);
  const totals = hours.map((h) => series.reduce((n, s) => n + (counts.get(`${h}|${s}`) ?? 0), 0));
  const max = Math.max(1, ...totals);
  const [w, h, left, bottom, top] = [720, 220, 44, 28, 10];
  const barW = (w - left - 8) / 24;
  const plotH = h - bottom - top;
  const bars = hours.map((hour, i) => {
    let y = h - bottom;
    return series.map((s, j) => {
      const n = counts.get(`${hour}|${s}`) ?? 0;
      if (n === 0) return '';
      const bh = (n / max) * plotH;
      y -= bh;
      return html`<rect x="${(left + i * barW + 1).toFixed(1)}" y="${y.toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${bh.toFixed(1)}" fill="${COLOURS[j % COLOURS.length]}"><title>${hour}:00Z ${s}: ${n}</title></rect>`;
    });
  });
  const labels = hours.map((hour, i) =>
    i % 3 === 0
      ? html`<text x="${(left + i * barW + barW / 2).toFixed(1)}" y="${h - 10}" text-anchor="middle" font-size="11" fill="#333">${hour.slice(11)}h</text>`
      : '',
  );
  const total = totals.reduce((a, b) => a + b, 0);
  return html`<figure class="chart">
<svg viewBox="0 0 ${w} ${h}" width="100%" role="img" aria-labelledby="chart-title" xmlns="http://www.w3.org/2000/svg">
<title id="chart-title">Issuances per hour, last 24 hours (UTC): ${total} in all, at most ${max} in one hour</title>
<line x1="${left}" y1="${h - bottom}" x2="${w - 8}" y2="${h - bottom}" stroke="#555"/>
<line x1="${left}" y1="${top}" x2="${left}" y2="${h - bottom}" stroke="#555"/>
<text x="${left - 6}" y="${top + 10}" text-anchor="end" font-size="11" fill="#333">${max}</text>
<text x="${left - 6}" y="${h - bottom}" text-anchor="end" font-size="11" fill="#333">0</text>
${bars}${labels}
</svg>
<figcaption>${
    series.length === 0
      ? 'No issuance in the last 24 hours.'
      : series.map(
          (s, j) =>
            html`<span class="legend"><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="${COLOURS[j % COLOURS.length]}"/></svg> ${s}</span> `,
        )
  }</figcaption>
</figure>
<details><summary>The numbers as a table</summary>
<table><caption>Issuances per hour (UTC)</caption>
<thead><tr><th scope="col">Hour</th>${series.map((s) => html`<th scope="col">${s}</th>`)}<th scope="col">Total</th></tr></thead>
<tbody>${hours.map(
    (hour, i) =>
      html`<tr><th scope="row">${hour.replace('T', ' ')}:00Z</th>${series.map((s) => html`<td>${counts.get(`${hour}|${s}`) ?? 0}</td>`)}<td>${totals[i]}</td></tr>`,
  )}</tbody></table></details>`;
}
