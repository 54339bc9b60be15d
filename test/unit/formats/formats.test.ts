import { describe, expect, it } from 'vitest';
import { channelFormat, FORMATS, formatsServing } from '../../../src/formats/index.js';
import { FORMAT_NAMES, PROOF_TYPES } from '../../../src/formats/names.js';
import { ProofTypeSchema } from '../../../src/formats/schema-file.js';

describe('the list of credential formats', () => {
  it('names the same formats, in the same order, as the names the lower floors read', () => {
    expect(FORMATS.map((f) => f.proofType)).toEqual(PROOF_TYPES);
    expect(FORMAT_NAMES.map((f) => f.proofType)).toEqual(PROOF_TYPES);
    // Published: request bodies, schema files and the OpenAPI document list these values.
    expect(ProofTypeSchema.options).toEqual(['SD_JWT_VC', 'BJJ_SIG_2021', 'MSO_MDOC']);
  });

  it('answers which formats serve each channel', () => {
    expect(formatsServing('hosted').map((f) => f.proofType)).toEqual(['SD_JWT_VC', 'BJJ_SIG_2021']);
    expect(channelFormat('hosted')).toBe('SD_JWT_VC');
    expect(channelFormat('direct')).toBe('SD_JWT_VC');
    expect(channelFormat('oid4vci')).toBe('SD_JWT_VC');
    // The hosting service's interface knows SD-JWT VC and BJJ only: an mdoc goes to standards wallets.
    expect(formatsServing('oid4vci').map((f) => f.proofType)).toEqual(['SD_JWT_VC', 'MSO_MDOC']);
  });
});
