import type { ProofType } from '../../model.js';
import type { CredentialFormat, StartedFormat } from '../format.js';
import { databaseBjjKey } from './database-bjj-key.js';
import { Iden3BjjIssuer, iden3ContextProblems } from './iden3-bjj-issuer.js';
import { BJJ_SIG_2021 } from './names.js';
import { isW3cCredential, verifyIden3Credential } from './verifier.js';

/** The started Iden3 format: its issuer (the DID, the trees) is what the Iden3 routes serve. */
export interface StartedIden3 extends StartedFormat {
  readonly issuer: Iden3BjjIssuer;
}

/** The Iden3 issuer among the started formats, when on (the Iden3 routes, tests). */
export function startedIden3Issuer(
  started: ReadonlyMap<ProofType, StartedFormat>,
): Iden3BjjIssuer | undefined {
  return (started.get(BJJ_SIG_2021) as StartedIden3 | undefined)?.issuer;
}

/**
 * Iden3 `BJJ_SIG_2021` (docs/architecture.md): W3C credentials with a BabyJubJub signature,
 * issued to the holder who asks (hosted). Its status mechanism is the issuer's revocation tree,
 * proven at `/credential-status/:nonce`; a revocation goes there first.
 */
export const iden3Bjj: CredentialFormat = {
  proofType: BJJ_SIG_2021,
  channels: ['hosted'],
  // On when a schema lists it at start-up: it opens the issuer identity (docs/architecture.md).
  async start(deps, schemas): Promise<StartedIden3 | undefined> {
    if (!schemas.some((s) => s.proofTypes.includes(BJJ_SIG_2021))) return undefined;
    const { config, store } = deps;
    const issuer = await Iden3BjjIssuer.open({
      store: store.iden3,
      // Several instances share the key through the database (sealed); one machine keeps the file.
      key: store.keys
        ? await databaseBjjKey(store.keys, store.iden3, {
            keysDir: config.keysDir,
            generateIfMissing: !config.production,
            kek: deps.secrets.keyEncryption.current,
            log: deps.log,
          })
        : undefined,
      keysDir: config.keysDir,
      generateKeyIfMissing: !config.production,
      urls: deps.identity.urls,
      schemasDir: config.schemasDir,
      didMethod: config.iden3.method,
      blockchain: config.iden3.blockchain,
      network: config.iden3.network,
      didMethodByte: config.iden3.methodByte,
      networkFlag: config.iden3.networkFlag,
      merklizeWorkers: config.iden3.merklizeWorkers,
    });
    return {
      issuer,
      revoker: {
        one: async (record, change) => (await issuer.revoke(record.revocationNonce, change)).record,
        many: (nonces, changes) => issuer.revokeMany(nonces, changes),
      },
      // The running loader's own check: a context URL it already serves from another file is refused.
      prepareSchema(schema) {
        try {
          issuer.prepareSchema(schema);
        } catch (err) {
          throw new Error(`iden3: ${(err as Error).message}`);
        }
      },
      alsoKnownAs: issuer.did,
      close: () => issuer.close(),
    };
  },
  schemaProblems(schemas, schemasDir, running) {
    const listing = schemas.filter((s) => s.proofTypes.includes(BJJ_SIG_2021));
    if (listing.length > 0 && !running)
      return listing.map((s) => ({
        file: s.file,
        message: `proofTypes: ${BJJ_SIG_2021} needs the Iden3 back-end, which starts only when a schema lists it at start-up; restart the server to add it`,
      }));
    return iden3ContextProblems(listing, schemasDir, (running as StartedIden3 | undefined)?.issuer);
  },
  verifier: {
    input: 'json',
    expects: 'a W3C credential with a BJJSignature2021 proof (an Iden3 credential JSON)',
    recognizes: isW3cCredential,
    verify: (input, options) => verifyIden3Credential(input, options),
  },
};
