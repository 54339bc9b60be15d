import express, { type RequestHandler } from 'express';
import swaggerUi from 'swagger-ui-dist';

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
 * `GET /docs`: Swagger UI rendering `/openapi.json`, every asset served from this origin by the
 * swagger-ui-dist package (no CDN; the page fetches nothing from elsewhere). Static files, so not
 * a row of the route table.
 */
export function docsRoutes(): RequestHandler[] {
  const assets = express.static(swaggerUi.getAbsoluteFSPath(), { index: false, fallthrough: true });
  const router = express.Router();
  router.get('/docs', (_req, res) => {
    res.type('html').send(DOCS_PAGE);
  });
  router.get('/docs/docs-init.js', (_req, res) => {
    res.type('application/javascript').send(DOCS_INIT);
  });
  router.use('/docs', assets);
  return [router];
}
