import { createHash, randomUUID } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import express from 'express';
import { codeForStatus, EmulatorError, emulatorErrorHandler, send } from './errors.js';
import type { EmulatorFaults } from './faults.js';
import { FaultInjector } from './faults.js';
import type { JwksSource, PartnerClaims } from './partner-auth.js';
import { createPartnerVerifier, PARTNER_AUTH_HEADER } from './partner-auth.js';
import type { VcUpload } from './schemas.js';
import { EmailBodySchema, FaultBodySchema, parseBody, VcUploadSchema } from './schemas.js';
import type { EmulatedRoute, EmulatorStoredVc, HolderRecord, RequestLogEntry } from './state.js';
import { EmulatorState } from './state.js';

export interface EmulatorOptions {
  /** Where the issuer's partner public keys are: a URL of its /.well-known/jwks.json, or a function returning the JWKS (in-process). */
  jwks: JwksSource;
  /** If set, the JWT's partnerId claim must equal it. */
  partnerId?: string;
  /** Clock override for tests. */
  now?: () => Date;
}

export interface Emulator {
  /** Routes relative to the v1 base (`SERVICE_V1_BASE_URL`). */
  router: Router;
  state: EmulatorState;
  faults: EmulatorFaults;
}

// The two routes of the real service (docs/interface.md "Direct issuance"), by path relative to the router.
const EMULATED_ROUTES: Readonly<Record<string, EmulatedRoute>> = {
  '/auth/initialize-user': 'initialize-user',
  '/dstorage/vcs': 'dstorage',
};

const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
const ENVELOPE_FIELDS = [
  'holderDid',
  'schemaId',
  'expiresAt',
  'data',
  'iv',
  'authTag',
  'encryptedKey',
  'externalId',
  'proofType',
] as const satisfies readonly (keyof VcUpload)[];

const sameEnvelope = (a: VcUpload, b: VcUpload): boolean => ENVELOPE_FIELDS.every((f) => a[f] === b[f]);

const holderView = (h: HolderRecord) => ({
  userId: h.userId,
  did: h.did,
  publicKey: h.publicKey,
  privateKeyPkcs8Hex: h.privateKeyPkcs8Hex,
});

const envelopeView = (s: EmulatorStoredVc) => ({
  ...s.response,
  envelope: s.envelope,
  idempotencyKey: s.idempotencyKey,
  partnerId: s.partnerId,
});

const logEntryOf = (res: Response): RequestLogEntry | undefined =>
  res.locals.requestLogEntry as RequestLogEntry | undefined;

const partnerOf = (res: Response): PartnerClaims => res.locals.partner as PartnerClaims;

const bodyString = (body: unknown, key: string): string | null => {
  if (typeof body !== 'object' || body === null) return null;
  const value = (body as Record<string, unknown>)[key];
  return typeof value === 'string' ? value : null;
};

export function createEmulator(options: EmulatorOptions): Emulator {
  const now = options.now ?? (() => new Date());
  const state = new EmulatorState();
  const faults = new FaultInjector();
  const verifyPartner = createPartnerVerifier({
    jwks: options.jwks,
    now,
    ...(options.partnerId === undefined ? {} : { partnerId: options.partnerId }),
  });

  // Logged before the body is parsed so that even a malformed call shows up in the log.
  const openLogEntry: RequestHandler = (req, res, next) => {
    const route = req.method === 'POST' ? EMULATED_ROUTES[req.path] : undefined;
    if (route) {
      const entry: RequestLogEntry = {
        at: now().toISOString(),
        route,
        email: null,
        externalId: null,
        idempotencyKey: req.get(IDEMPOTENCY_KEY_HEADER) ?? null,
        requestId: req.get('x-request-id') ?? null,
        status: 0,
      };
      state.requests.push(entry);
      res.locals.requestLogEntry = entry;
    }
    next();
  };

  const completeLogEntry: RequestHandler = (req, res, next) => {
    const entry = logEntryOf(res);
    if (entry) {
      entry.email = bodyString(req.body, 'email');
      entry.externalId = bodyString(req.body, 'externalId');
    }
    next();
  };

  const authenticate = async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    res.locals.partner = await verifyPartner(req.get(PARTNER_AUTH_HEADER));
    next();
  };

  // Injected after authentication and before any effect: a failed call stores nothing.
  const injectFault =
    (route: EmulatedRoute): RequestHandler =>
    (_req, _res, next) => {
      const status = faults.take(route);
      if (status === undefined) {
        next();
        return;
      }
      throw new EmulatorError(status, codeForStatus(status), `injected fault on ${route}`);
    };

  // docs/interface.md "Direct issuance", initialize-user: resolve or create the recipient account.
  const initializeUser: RequestHandler = (req, res) => {
    const { email } = parseBody(EmailBodySchema, req.body);
    const { holder } = state.resolveHolder(email, now());
    send(res, 200, { userId: holder.userId, did: holder.did, publicKey: holder.publicKey });
  };

  // docs/interface.md "Direct issuance", dstorage/vcs: idempotent by externalId, the same value being reused on retries.
  const storeEnvelope: RequestHandler = (req, res) => {
    const envelope = parseBody(VcUploadSchema, req.body);
    const existing = state.envelopes.get(envelope.externalId);
    if (existing) {
      if (!sameEnvelope(existing.envelope, envelope)) {
        throw new EmulatorError(409, 'CONFLICT', 'externalId: already stored with a different envelope');
      }
      send(res, 201, existing.response);
      return;
    }
    const holderPart = createHash('sha256').update(envelope.holderDid).digest('hex').slice(0, 16);
    const stored: EmulatorStoredVc = {
      envelope,
      response: {
        storagePath: `vcs/${holderPart}/${randomUUID()}`,
        state: 'stored',
        envelopeVersion: '1',
        createdAt: now().toISOString(),
      },
      idempotencyKey: req.get(IDEMPOTENCY_KEY_HEADER) ?? null,
      partnerId: partnerOf(res).partnerId,
    };
    state.envelopes.set(envelope.externalId, stored);
    send(res, 201, stored.response);
  };

  const router = express.Router();
  router.use(openLogEntry);
  router.use(express.json({ limit: '1mb' }));
  router.use(completeLogEntry);

  router.post('/auth/initialize-user', authenticate, injectFault('initialize-user'), initializeUser);
  router.post('/dstorage/vcs', authenticate, injectFault('dstorage'), storeEnvelope);

  // Read-back and control routes for the demo and the tests; the real service has none of these.
  router.get('/_emulator/envelopes', (req, res) => {
    const holderDid = typeof req.query.holderDid === 'string' ? req.query.holderDid : undefined;
    send(res, 200, { envelopes: state.envelopesOf(holderDid).map(envelopeView) });
  });
  router.get('/_emulator/envelopes/:externalId', (req, res) => {
    const stored = state.envelopes.get(req.params.externalId);
    if (!stored) throw new EmulatorError(404, 'NOT_FOUND', 'externalId: no envelope stored');
    send(res, 200, envelopeView(stored));
  });
  router.get('/_emulator/holders/:email', (req, res) => {
    const holder = state.holderByEmail(req.params.email);
    if (!holder) throw new EmulatorError(404, 'NOT_FOUND', 'email: no such holder');
    send(res, 200, holderView(holder));
  });
  // Creates a holder without a partner JWT, as a wallet sign-up would in the hosted flow.
  router.post('/_emulator/holders', (req, res) => {
    const { email } = parseBody(EmailBodySchema, req.body);
    const { holder, created } = state.resolveHolder(email, now());
    send(res, created ? 201 : 200, holderView(holder));
  });
  router.post('/_emulator/faults', (req, res) => {
    const { route, count, status } = parseBody(FaultBodySchema, req.body);
    faults.failNext(route, count, status);
    send(res, 200, { route, count, status: status ?? 500 });
  });
  router.delete('/_emulator/faults', (_req, res) => {
    faults.clear();
    res.status(204).end();
  });
  router.get('/_emulator/requests', (_req, res) => {
    send(res, 200, { requests: state.requests });
  });

  router.use((req, res) => {
    send(res, 404, { code: 'NOT_FOUND', message: `no route ${req.method} ${req.path}` });
  });
  router.use(emulatorErrorHandler);

  return { router, state, faults };
}
