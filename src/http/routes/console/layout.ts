import type { Response } from 'express';
import { AppError } from '../../../errors.js';
import { type Html, html } from './html.js';
import type { ConsoleRequest } from './session.js';

/** The console's pages, in the order of the navigation; `bulk` only where the capability exists. */
export const PAGES = [
  { id: 'overview', href: '/console', label: 'Overview' },
  { id: 'issuances', href: '/console/issuances', label: 'Issuances' },
  { id: 'bulk', href: '/console/bulk', label: 'Bulk' },
  { id: 'audit', href: '/console/audit', label: 'Audit' },
  { id: 'keys', href: '/console/keys', label: 'Keys' },
  { id: 'schemas', href: '/console/schemas', label: 'Schemas' },
] as const;
export type PageId = (typeof PAGES)[number]['id'] | 'credential';

/**
 * Content-Security-Policy of every console answer: scripts, styles and everything else from our
 * own origin only, no inline script or style, no framing (docs/security.md "The admin console").
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "object-src 'none'",
].join('; ');

export function securityHeaders(res: Response): void {
  res.set('Content-Security-Policy', CONSOLE_CSP);
  res.set('X-Content-Type-Options', 'nosniff');
  res.set('X-Frame-Options', 'DENY');
  res.set('Referrer-Policy', 'same-origin');
  res.set('Cache-Control', 'no-store');
}

/** A whole page: landmarks (banner, navigation, main), a skip link, the signed-in name, sign-out. */
export function page(
  res: Response,
  opts: {
    title: string;
    current: PageId;
    body: Html | Array<Html | string>;
    status?: number;
    pages: readonly PageId[];
  },
): void {
  const session = res.locals.console as ConsoleRequest | undefined;
  const nav = PAGES.filter((p) => opts.pages.includes(p.id));
  const doc = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${opts.title} · issuer-kit console</title>
<link rel="stylesheet" href="/console/assets/console.css">
${session ? html`<meta name="csrf-token" content="${session.csrf}">` : ''}
<script src="/console/assets/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<p class="brand">issuer-kit console</p>
${
  session
    ? html`<nav aria-label="Console"><ul>${nav.map(
        (p) =>
          html`<li><a href="${p.href}"${p.id === opts.current ? html` aria-current="page"` : ''}>${p.label}</a></li>`,
      )}</ul></nav>
<form method="post" action="/console/sign-out" class="signout">
<input type="hidden" name="_csrf" value="${session.csrf}">
<span>Signed in as <strong>${session.actor}</strong></span>
<button type="submit">Sign out</button>
</form>`
    : ''
}
</header>
<main id="main" tabindex="-1">
<h1>${opts.title}</h1>
<div id="flash" role="status" aria-live="polite"></div>
${opts.body}
</main>
<dialog id="confirm" aria-labelledby="confirm-title">
<form method="dialog">
<h2 id="confirm-title">Please confirm</h2>
<p id="confirm-text"></p>
<div class="buttons">
<button value="cancel" type="submit">Cancel</button>
<button value="confirm" type="submit" class="danger" id="confirm-ok">Confirm</button>
</div>
</form>
</dialog>
</body>
</html>`;
  securityHeaders(res);
  res
    .status(opts.status ?? 200)
    .type('html')
    .send(doc.text);
}

/** A problem shown at the top of a page (a bad filter, an unknown credential). */
export const problem = (text: string): Html => html`<p class="error" role="alert">${text}</p>`;

/**
 * A filtered page's results, or the problem its filter is (400, shown above the form); a failure
 * of the kit itself (5xx, or anything not an AppError) goes on to the error handler.
 */
export async function resultsOrProblem(
  build: () => Promise<Html>,
): Promise<{ results: Html; status: number }> {
  try {
    return { results: await build(), status: 200 };
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    return { results: problem(err.message), status: 400 };
  }
}
