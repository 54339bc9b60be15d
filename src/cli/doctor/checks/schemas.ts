import { randomUUID } from 'node:crypto';
import { createClaimsProviders } from '../../../claims/index.js';
import { loadSchemas, SchemaFileError } from '../../../formats/schema-file.js';
import { postJson } from '../../../outbound/http-json.js';
import type { SchemaRegistry } from '../../../schemas/schema-registry.js';
import type { DoctorCheck } from '../doctor-context.js';
import { type DoctorLine, line } from '../line.js';

/**
 * Every schema file loads, and there is at least one (the image ships none: docs/deployment.md
 * "The image"); every `http` claims source answers a lookup for a user that does not exist.
 */
export const schemas: DoctorCheck = {
  items: ['schemas', 'claims <schemaId>'],
  async run(ctx) {
    const { config } = ctx;
    let registry: SchemaRegistry;
    try {
      registry = loadSchemas(config.schemasDir, ctx.identity.urls);
    } catch (err) {
      if (!(err instanceof SchemaFileError)) throw err;
      return err.message.split('\n').map((l) => line('schemas', 'FAIL', l));
    }
    if (registry.all().length === 0)
      return [
        line(
          'schemas',
          'FAIL',
          `no schema file in ${config.schemasDir}: nothing can be issued; put the issuer's schema files there (in a container, mount them: docs/deployment.md)`,
        ),
      ];
    const lines: DoctorLine[] = [
      line('schemas', 'PASS', `${registry.all().length} schema(s) load from ${config.schemasDir}`),
    ];
    const http = registry.all().filter((s) => s.claims.provider === 'http');
    const store = await ctx.store();
    if (http.length === 0 || !store) return lines;
    const providers = await createClaimsProviders(registry, store.claims, config.schemasDir, postJson);
    for (const schema of http) {
      const item = `claims ${schema.schemaId}`;
      const userId = `doctor-${randomUUID()}`;
      try {
        const answer = await providers.get(schema.schemaId)!.lookup({
          userId,
          schemaId: schema.schemaId,
          proofType: schema.proofTypes[0]!,
        });
        lines.push(
          line(
            item,
            'PASS',
            `the http source answered eligible:${answer.eligible}${'pending' in answer ? ' pending:true' : ''} for ${userId}`,
          ),
        );
      } catch (err) {
        lines.push(line(item, 'FAIL', `the http source failed a lookup: ${(err as Error).message}`));
      }
    }
    return lines;
  },
};
