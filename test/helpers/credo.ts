import 'reflect-metadata';
import {
  createPrivateKey,
  createPublicKey,
  sign as cryptoSign,
  verify as cryptoVerify,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  Agent,
  type AgentContext,
  CacheModule,
  DependencyManager,
  DidsModule,
  InjectionSymbols,
  InMemoryLruCache,
  Kms,
  MdocModule,
  RecordNotFoundError,
  SdJwtVcModule,
  WebDidResolver,
  X509Module,
} from '@credo-ts/core';
import { OpenId4VcModule } from '@credo-ts/openid4vc';
import { generateEncodedKeyPair } from '../../src/envelope/keys.js';

/**
 * Credo (`@credo-ts/core` 0.6.3) as an independent verifier. `@credo-ts/node` 0.6.x is not in the
 * registry (only 0.5.x and a 0.6 alpha), so the two platform pieces Credo asks its host for are
 * given here: a verify-only key-management backend over node:crypto (Credo chooses the key, the
 * algorithm and what is signed; the backend only runs ECDSA verify), and an empty storage
 * service (verification stores nothing). Everything else is Credo's own code: the x5c chain
 * validation against trusted certificates, its did:web resolver, the SD-JWT checks, the status
 * list fetch.
 */
class VerifyOnlyKms implements Kms.KeyManagementService {
  readonly backend = 'node-verify-only';

  isOperationSupported(_ctx: AgentContext, operation: Kms.KmsOperation): boolean {
    return operation.operation === 'verify' && operation.algorithm === 'ES256';
  }
  async verify(_ctx: AgentContext, options: Kms.KmsVerifyOptions): Promise<Kms.KmsVerifyReturn> {
    if (!('publicJwk' in options.key) || !options.key.publicJwk)
      throw new Error('verify by key id is not offered');
    const { kty, crv, x, y } = options.key.publicJwk as { kty: string; crv: string; x: string; y: string };
    const key = createPublicKey({ key: { kty, crv, x, y }, format: 'jwk' });
    const verified = cryptoVerify(
      'sha256',
      Buffer.from(options.data),
      { key, dsaEncoding: 'ieee-p1363' },
      Buffer.from(options.signature),
    );
    return verified ? { verified: true, publicJwk: options.key.publicJwk } : { verified: false };
  }
  private refuse(): never {
    throw new Error('this verifier-only backend does not hold keys');
  }
  getPublicKey(): Promise<null> {
    return Promise.resolve(null);
  }
  createKey(): never {
    return this.refuse();
  }
  importKey(): never {
    return this.refuse();
  }
  deleteKey(): never {
    return this.refuse();
  }
  sign(): never {
    return this.refuse();
  }
  encrypt(): never {
    return this.refuse();
  }
  decrypt(): never {
    return this.refuse();
  }
  randomBytes(): never {
    return this.refuse();
  }
}

// An empty store: Credo asks it for DIDs it created itself (none) before resolving one.
const emptyStorage = new Proxy(
  {},
  {
    get: (_t, name) => {
      if (name === 'then') return undefined;
      if (name === 'findByQuery' || name === 'getAll') return async () => [];
      if (name === 'getById')
        return async (_ctx: unknown, _cls: unknown, id: string) => {
          throw new RecordNotFoundError(`record ${id} not found`, { recordType: 'none' });
        };
      return () => {
        throw new Error(`storage.${String(name)}: verification stores nothing`);
      };
    },
  },
);

class NoFileSystem {
  readonly dataPath = '/nonexistent';
  readonly cachePath = '/nonexistent';
  readonly tempPath = '/nonexistent';
}

export interface CredoVerifierOptions {
  /** PEM or base64 DER certificates Credo trusts for x5c chains. */
  trustedCertificates?: string[];
  /** The transport Credo uses for status lists and type metadata (default: global fetch). */
  fetch?: typeof fetch;
  /** Our development origins are http on loopback. */
  allowInsecureHttpUrls?: boolean;
}

/**
 * The key store Credo's holder asks its host for (`@credo-ts/askar` in an app; `@credo-ts/node`
 * 0.6.x is not in the registry): P-256 keys in memory, ES256 signatures with node:crypto. Credo
 * decides which keys to make and what to sign.
 */
class InMemoryHolderKms implements Kms.KeyManagementService {
  readonly backend = 'node-in-memory-holder';
  private readonly verifier = new VerifyOnlyKms();
  private readonly keys = new Map<string, { privateKey: KeyObject; publicJwk: Kms.KmsJwkPublic }>();

  isOperationSupported(ctx: AgentContext, operation: Kms.KmsOperation): boolean {
    if (operation.operation === 'createKey')
      return operation.type.kty === 'EC' && 'crv' in operation.type && operation.type.crv === 'P-256';
    if (operation.operation === 'sign') return operation.algorithm === 'ES256';
    if (operation.operation === 'randomBytes') return true;
    return this.verifier.isOperationSupported(ctx, operation);
  }
  async createKey<Type extends Kms.KmsCreateKeyType>(
    _ctx: AgentContext,
    options: Kms.KmsCreateKeyOptions<Type>,
  ): Promise<Kms.KmsCreateKeyReturn<Type>> {
    if (options.type.kty !== 'EC') throw new Error('this wallet makes P-256 keys only');
    // Encoded by the generation itself (docs/dependencies.md, the Node 20 export hang).
    const { spki, pkcs8 } = generateEncodedKeyPair('p256');
    const keyId = options.keyId ?? randomBytes(12).toString('base64url');
    const { kty, crv, x, y } = createPublicKey({ key: spki, format: 'der', type: 'spki' }).export({
      format: 'jwk',
    });
    const publicJwk = { kty, crv, x, y, kid: keyId } as Kms.KmsJwkPublic;
    this.keys.set(keyId, {
      privateKey: createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }),
      publicJwk,
    });
    return { keyId, publicJwk } as unknown as Kms.KmsCreateKeyReturn<Type>;
  }
  async getPublicKey(_ctx: AgentContext, keyId: string): Promise<Kms.KmsJwkPublic | null> {
    return this.keys.get(keyId)?.publicJwk ?? null;
  }
  async sign(_ctx: AgentContext, options: Kms.KmsSignOptions): Promise<Kms.KmsSignReturn> {
    const key = this.keys.get(options.keyId);
    if (!key || options.algorithm !== 'ES256') throw new Error('no such ES256 key in this wallet');
    const signature = cryptoSign('sha256', Buffer.from(options.data), {
      key: key.privateKey,
      dsaEncoding: 'ieee-p1363',
    });
    return { signature: new Uint8Array(signature) };
  }
  verify(ctx: AgentContext, options: Kms.KmsVerifyOptions): Promise<Kms.KmsVerifyReturn> {
    return this.verifier.verify(ctx, options);
  }
  randomBytes(_ctx: AgentContext, options: Kms.KmsRandomBytesOptions): Kms.KmsRandomBytesReturn {
    return new Uint8Array(randomBytes(options.length));
  }
  importKey(): never {
    throw new Error('this wallet imports no keys');
  }
  deleteKey(): Promise<boolean> {
    throw new Error('this wallet deletes no keys');
  }
  encrypt(): never {
    throw new Error('this wallet does not encrypt');
  }
  decrypt(): never {
    throw new Error('this wallet does not decrypt');
  }
}

/**
 * A credential binding resolver for Credo's holder: a new P-256 key in the agent's KMS for the
 * credential each time it is asked; `keys` lists the public keys it bound, the latest last.
 */
export function newKeyBinding(): {
  keys: Kms.PublicJwk[];
  resolver: (options: { agentContext: AgentContext }) => Promise<{ method: 'jwk'; keys: Kms.PublicJwk[] }>;
} {
  const keys: Kms.PublicJwk[] = [];
  return {
    keys,
    resolver: async ({ agentContext }) => {
      const key = await agentContext
        .resolve(Kms.KeyManagementApi)
        .createKey({ type: { kty: 'EC', crv: 'P-256' } });
      const bound = Kms.PublicJwk.fromPublicJwk(key.publicJwk);
      keys.push(bound);
      return { method: 'jwk', keys: [bound] };
    },
  };
}

/**
 * Credo's OpenID4VCI holder (`@credo-ts/openid4vc` 0.6.3, the holder module Credo-based wallets
 * use) with the verifier's platform pieces and a key store. It checks every credential it receives
 * (signature, issuer key by did:web or x5c, status when asked) before answering it.
 */
export function credoHolder(options: CredoVerifierOptions = {}) {
  const dm = new DependencyManager();
  dm.registerInstance(InjectionSymbols.StorageService, emptyStorage);
  return new Agent(
    {
      config: { allowInsecureHttpUrls: options.allowInsecureHttpUrls ?? false },
      dependencies: {
        FileSystem: NoFileSystem as any,
        EventEmitterClass: EventEmitter,
        fetch: options.fetch ?? fetch,
        WebSocketClass: class {} as any,
      },
      modules: {
        cache: new CacheModule({ cache: new InMemoryLruCache({ limit: 50 }) }),
        kms: new Kms.KeyManagementModule({ backends: [new InMemoryHolderKms()] }),
        dids: new DidsModule({ resolvers: [new WebDidResolver()] }),
        x509: new X509Module({ trustedCertificates: options.trustedCertificates as [string] | undefined }),
        sdJwtVc: new SdJwtVcModule(),
        mdoc: new MdocModule(),
        openid4vc: new OpenId4VcModule(),
      },
    },
    dm,
  );
}

export function credoVerifier(options: CredoVerifierOptions = {}) {
  const dm = new DependencyManager();
  dm.registerInstance(InjectionSymbols.StorageService, emptyStorage);
  const agent = new Agent(
    {
      config: { allowInsecureHttpUrls: options.allowInsecureHttpUrls ?? false },
      dependencies: {
        FileSystem: NoFileSystem as any,
        EventEmitterClass: EventEmitter,
        fetch: options.fetch ?? fetch,
        WebSocketClass: class {} as any,
      },
      modules: {
        // In memory: Credo's default DID cache lives in its storage.
        cache: new CacheModule({ cache: new InMemoryLruCache({ limit: 50 }) }),
        kms: new Kms.KeyManagementModule({ backends: [new VerifyOnlyKms()] }),
        dids: new DidsModule({ resolvers: [new WebDidResolver()] }),
        x509: new X509Module({ trustedCertificates: options.trustedCertificates as [string] | undefined }),
        sdJwtVc: new SdJwtVcModule(),
      },
    },
    dm,
  );
  return agent;
}
