import { join } from 'node:path';
import express, { type RequestHandler } from 'express';
// The package's path helper alone: its main module also evaluates the 1.5 MB browser bundle,
// about a third of a second of CPU at every start, for nothing the server uses.
import getAbsoluteFSPath from 'swagger-ui-dist/absolute-path.js';

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>issuer-kit API</title>
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/docs-init.js"></script>
</body>
</html>
`;

const DOCS_INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
});
`;

/**
 * The only files of swagger-ui-dist the page loads. The package folder also holds its
 * `package.json`, `README.md`, source maps and an `index.html` whose initializer points at a
 * third-party origin: none of that is served (docs/security.md "What the server exposes").
 */
const DOCS_ASSETS = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
} as const;

/**
 * `GET /docs`: Swagger UI rendering `/openapi.json`, every asset served from this origin by the
 * swagger-ui-dist package (no CDN; the page fetches nothing from elsewhere). Static files, so not
 * a row of the route table.
 */
export function docsRoutes(): RequestHandler[] {
  const root = getAbsoluteFSPath();
  const router = express.Router({ caseSensitive: true, strict: true });
  router.get('/docs', (_req, res) => {
    res.type('html').send(DOCS_PAGE);
  });
  router.get('/docs/docs-init.js', (_req, res) => {
    res.type('application/javascript').send(DOCS_INIT);
  });
  for (const [file, type] of Object.entries(DOCS_ASSETS)) {
    const path = join(root, file);
    router.get(`/docs/${file}`, (_req, res, next) => {
      res.sendFile(path, { headers: { 'content-type': type }, maxAge: '1h' }, (err) => {
        if (err) next(err);
      });
    });
  }
  return [router];
}
