export { base58btcEncode, x25519DidKey } from './did-key.js';
export type { Emulator, EmulatorOptions } from './emulator.js';
export { createEmulator } from './emulator.js';
export type { EmulatorErrorCode } from './errors.js';
export { EmulatorError } from './errors.js';
export type { EmulatorFaults } from './faults.js';
export type { JwksSource, PartnerClaims } from './partner-auth.js';
export { PARTNER_AUTH_HEADER } from './partner-auth.js';
export type { VcUpload } from './schemas.js';
export { isRoleAddress, VcUploadSchema } from './schemas.js';
export type { EmulatorServer, EmulatorServerOptions } from './server.js';
export { startEmulatorServer } from './server.js';
export type {
  EmulatedRoute,
  EmulatorStoredVc,
  HolderRecord,
  RequestLogEntry,
  StoreResponse,
} from './state.js';
export { EmulatorState } from './state.js';
