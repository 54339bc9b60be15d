import { createHash, timingSafeEqual } from 'node:crypto';
import { statSync } from 'node:fs';
import type * as Pkcs11Js from 'pkcs11js';
import { readPinFile } from '../../config/key-backend-config.js';
import { KeyError } from '../key-error.js';
import { pkcs11Reason } from './pkcs11-errors.js';

/**
 * The application's login on a PKCS#11 token, and the PIN it presents.
 *
 * A login outlives a PIN changed on the token (C_SetPIN by another application ends no login in
 * PKCS#11 v2.40, and SoftHSM2 keeps it), so a PIN change bites at the next login: after the token
 * was away, or at a restart. Each login reads PKCS11_PIN_FILE again, so writing the token's new PIN there
 * is how an operator follows a PIN change without a restart; a PIN the token refused is not
 * presented again until the file is written again, since tokens lock a PIN after a few wrong tries.
 */

/** A PIN the token refused, as its SHA-256, and the version of PKCS11_PIN_FILE it came from. */
interface RefusedPin {
  digest: Buffer;
  source: string;
  reason: string;
}

export class TokenLogin {
  /** The PIN last read that was not refused (PKCS11_PIN_FILE may be unreadable while it is replaced). */
  private pin: string;
  private refused: RefusedPin | undefined;

  /**
   * `pin` is the PIN read at start (PKCS11_PIN, or PKCS11_PIN_FILE's first line then); `pinFile`
   * is read again at every login; `where` names the token in messages (never the PIN).
   */
  constructor(
    pin: string,
    private readonly pinFile: string | undefined,
    private readonly where: string,
  ) {
    this.pin = pin;
  }

  /**
   * Logs the application in with the PIN as it is now (PKCS11_PIN_FILE read again). A PIN the
   * token refused is not presented again until the file changes: each wrong try counts towards
   * the token locking its PIN, and `/readyz` probes would spend them in seconds.
   */
  login(lib: Pkcs11Js.PKCS11, userType: number, session: Buffer): void {
    const { pin, source } = this.currentPin();
    const digest = createHash('sha256').update(pin).digest();
    const refused = this.refused;
    if (refused && refused.source === source && timingSafeEqual(refused.digest, digest))
      throw new KeyError(
        `PKCS11_PIN: the ${this.where} refused this PIN (${refused.reason}); it is not tried again until ${
          this.pinFile === undefined ? 'a restart with the right PIN' : 'PKCS11_PIN_FILE is written'
        }`,
      );
    try {
      lib.C_Login(session, userType, pin);
    } catch (err) {
      if (/CKR_USER_ALREADY_LOGGED_IN/.test((err as Error).message)) return;
      if (/CKR_PIN_(INCORRECT|INVALID|LEN_RANGE|LOCKED|EXPIRED)/.test((err as Error).message)) {
        this.refused = { digest, source, reason: pkcs11Reason(err) };
        throw new KeyError(`PKCS11_PIN: the ${this.where} refused the login (${pkcs11Reason(err)})`);
      }
      throw err;
    }
    this.refused = undefined;
    this.pin = pin;
  }

  /**
   * The PIN to log in with: PKCS11_PIN_FILE's first line as the file is now (the last good PIN
   * while it cannot be read, e.g. a secret mount being replaced), and which version of the file
   * that is (inode and modification time: writing the file again, even the same PIN, is a new one).
   */
  private currentPin(): { pin: string; source: string } {
    const file = this.pinFile;
    if (file !== undefined) {
      try {
        const { ino, mtimeMs } = statSync(file);
        const pin = readPinFile(file);
        if (pin) return { pin, source: `${ino}:${mtimeMs}` };
      } catch {
        // Unreadable for now: the last good PIN below.
      }
    }
    return { pin: this.pin, source: '' };
  }
}
