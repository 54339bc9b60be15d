import { buildDIDType, registerDidMethodNetwork } from '@iden3/js-iden3-core';

/** docs/configuration.md: `IDEN3_METHOD`, `IDEN3_BLOCKCHAIN`, `IDEN3_NETWORK` (defaults iden3 / privado / test). */
export interface Iden3DidOptions {
  method: string;
  blockchain: string;
  network: string;
  /**
   * Only for a method js-iden3-core does not know: its DID method byte (below 0xff), as verifiers
   * must register it too.
   */
  methodByte?: number | undefined;
  /** Only for a blockchain:network pair js-iden3-core does not know for the method: its network flag byte. */
  networkFlag?: number | undefined;
}

export const DEFAULT_IDEN3_DID: Iden3DidOptions = { method: 'iden3', blockchain: 'privado', network: 'test' };

/**
 * The two DID type bytes of the issuer identifier. Combinations js-iden3-core ships (e.g.
 * iden3/privado/test, polygonid/polygon/amoy) need nothing else; a custom one is registered with
 * `registerDidMethodNetwork` from the explicit bytes, never from guessed ones (a DID built on bytes
 * verifiers do not share would not resolve anywhere).
 */
export function resolveDidType(options: Iden3DidOptions): Uint8Array {
  const { method, blockchain, network, methodByte, networkFlag } = options;
  try {
    return buildDIDType(method, blockchain, network);
  } catch (err) {
    if (networkFlag === undefined) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new Error(
        `Iden3 DID ${method}:${blockchain}:${network} (IDEN3_METHOD, IDEN3_BLOCKCHAIN, IDEN3_NETWORK) is not known to js-iden3-core (${reason}); a custom one needs its network flag (and method byte for a new method)`,
      );
    }
  }
  registerDidMethodNetwork({
    method,
    blockchain,
    network,
    networkFlag,
    ...(methodByte === undefined ? {} : { methodByte }),
  });
  return buildDIDType(method, blockchain, network);
}
