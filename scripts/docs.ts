// Writes the generated documentation: docs/configuration.md from the variables' `.meta()`.
import { writeFileSync } from 'node:fs';
import { CONFIGURATION_DOC, renderConfiguration } from './docs/configuration.js';

writeFileSync(CONFIGURATION_DOC, renderConfiguration());
console.log(`wrote ${CONFIGURATION_DOC}`);
