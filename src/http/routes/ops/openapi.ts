import type { Request, Response } from 'express';
import { z } from 'zod';
import { type DocumentedResponse, ErrorBodySchema, isJsonMedia, routeResponses } from '../responses.js';
import { json200, type Route, type RouteFactory, TAGS } from '../route.js';

/** `GET /openapi.json`: the document of the route table, built once on first request. */
export const openApiRoute: RouteFactory = (ctx, routes) => ({
  method: 'get',
  path: '/openapi.json',
  group: 'ops',
  auth: 'none',
  doc: {
    operationId: 'openapi',
    summary: 'This OpenAPI 3.1 document',
    tags: TAGS.ops,
    // Its own schema is the OpenAPI 3.1 one; checked here are the parts clients rely on.
    responses: json200('OpenAPI 3.1', OpenApiDocumentSchema),
  },
  handler: serveOnce(() => buildOpenApi(routes(), { version: ctx.version, serverUrl: ctx.identity.origin })),
});

const OpenApiDocumentSchema = z.looseObject({
  openapi: z.literal('3.1.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.record(z.string(), z.unknown())),
});

function serveOnce(document: () => unknown) {
  let body: string | undefined;
  return (_req: Request, res: Response) => {
    body ??= JSON.stringify(document());
    res.type('application/json').send(body);
  };
}

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io: 'input',
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  return rest;
}

/** Express `:param` → OpenAPI `{param}`. */
export const openApiPath = (path: string): string => path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');

function errorResponse(answer: DocumentedResponse) {
  const codes = answer.errorCodes ?? [];
  return {
    description: answer.description,
    content: {
      'application/json': {
        schema: {
          allOf: [
            { $ref: '#/components/schemas/Error' },
            { properties: { code: codes.length === 1 ? { const: codes[0] } : { enum: codes } } },
          ],
        },
      },
    },
  };
}

/** `{}` after the token: /metrics is open while METRICS_TOKEN is unset. */
const SECURITY = {
  'api-key': [{ apiKey: [] }],
  'admin-api-key': [{ adminApiKey: [] }],
  'metrics-token': [{ metricsToken: [] }, {}],
  none: [],
} as const satisfies Record<Route['auth'], unknown[]>;

/** The OpenAPI 3.1 document of a route table. */
export function buildOpenApi(rows: readonly Route[], info: { version: string; serverUrl: string }) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const row of rows) {
    const { doc } = row;
    const parameters: unknown[] = [];
    for (const [, name] of row.path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)) {
      const schema = doc.params?.[name!];
      parameters.push({
        name,
        in: 'path',
        required: true,
        schema: schema ? jsonSchema(schema) : { type: 'string' },
      });
    }
    if (doc.query) {
      const query = jsonSchema(doc.query) as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, schema] of Object.entries(query.properties ?? {})) {
        parameters.push({ name, in: 'query', required: query.required?.includes(name) ?? false, schema });
      }
    }
    const responses: Record<string, unknown> = {};
    for (const [status, answer] of routeResponses(row)) {
      responses[String(status)] = answer.errorCodes
        ? errorResponse(answer)
        : {
            description: answer.description,
            ...(answer.contentTypes.length > 0
              ? {
                  content: Object.fromEntries(
                    answer.contentTypes.map((type) => [
                      type,
                      answer.schema && isJsonMedia(type) ? { schema: jsonSchema(answer.schema) } : {},
                    ]),
                  ),
                }
              : {}),
          };
    }
    const security = SECURITY[row.auth];
    const operation: Record<string, unknown> = {
      operationId: doc.operationId,
      summary: doc.summary,
      tags: doc.tags,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(doc.body
        ? {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: jsonSchema(doc.body) } },
            },
          }
        : {}),
      responses,
      security,
    };
    const key = openApiPath(row.path);
    paths[key] = { ...paths[key], [row.method]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'issuer-kit',
      version: info.version,
      description:
        'Issuer server kit: hosted and direct issuance of SD-JWT VC and Iden3 credentials, envelope-encrypted to the holder.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: info.serverUrl }],
    paths,
    components: {
      schemas: { Error: jsonSchema(ErrorBodySchema) },
      securitySchemes: {
        apiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'x-api-key',
          description: 'The holder-facing API key (API_KEY)',
        },
        adminApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'x-admin-api-key',
          description: "The admin API key (ADMIN_API_KEY); the issuer's own servers only",
        },
        metricsToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'METRICS_TOKEN, when set; /metrics is open otherwise',
        },
      },
    },
  };
}
