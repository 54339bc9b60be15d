import { accessSync, constants } from 'node:fs';
import { loadSchemas } from '../../../formats/schema-file.js';
import type { DoctorCheck } from '../doctor-context.js';
import { line } from '../line.js';

/** The host of the bundled example schema's URLs (schemas/membership-v1.json). */
const EXAMPLE_HOST = 'issuer.example';

/** Where to change a schema file: SCHEMAS_DIR itself, or where it is mounted from when read-only. */
const whereToChange = (dir: string): string => {
  try {
    accessSync(dir, constants.W_OK);
    return `in ${dir}`;
  } catch {
    // A container's read-only mount (docs/deployment.md): the files are changed at their source.
    return `in the folder mounted at ${dir} (read-only here)`;
  }
};

const onExampleHost = (value: string | undefined): boolean => {
  if (value === undefined) return false;
  try {
    return new URL(value).hostname === EXAMPLE_HOST;
  } catch {
    return false;
  }
};

/**
 * In production, a WARN for each schema still naming the example's host (its vct, JSON-LD context
 * or JSON Schema on `issuer.example`): the bundled example, served as if it were the issuer's own.
 */
export const exampleSchema: DoctorCheck = {
  items: ['example schema'],
  run({ config, identity }) {
    if (!config.production) return [];
    let all: ReturnType<ReturnType<typeof loadSchemas>['all']>;
    try {
      all = loadSchemas(config.schemasDir, identity.urls).all();
    } catch {
      // The schemas line reports it.
      return [];
    }
    const examples = all.filter((s) =>
      [s.sdJwt?.vct, s.iden3?.contextUrl, s.iden3?.jsonSchemaUrl].some(onExampleHost),
    );
    if (examples.length === 0) return [];
    const where = whereToChange(config.schemasDir);
    return examples.map((s) =>
      line(
        'example schema',
        'WARN',
        `${s.schemaId} is the bundled example (its URLs are on ${EXAMPLE_HOST}); replace it with the issuer's own schema ${where}`,
      ),
    );
  },
};
