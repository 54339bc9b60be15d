import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REQUIRE_SERVICES } from './services.js';
import { tempDir } from './tmp.js';

/**
 * SoftHSM2 (Debian `softhsm2`, installed by scripts/ensure-softhsm.sh) as the PKCS#11 token of
 * KEY_BACKEND=pkcs11 tests. Each token lives in its own temporary SOFTHSM2_CONF directory,
 * initialized with `softhsm2-util`. SoftHSM reads SOFTHSM2_CONF and lists its tokens when a
 * process first initializes the library, so a test process has one token (`processToken`), made
 * before any backend opens; a test starting other processes makes one per process group
 * (`newSoftHsmToken`) and hands them its `env`.
 */
export const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';

export interface SoftHsmToken {
  module: string;
  label: string;
  pin: string;
  soPin: string;
  /** The SOFTHSM2_CONF file. */
  conf: string;
  /** The token directory named by it (move it away to take the token away). */
  tokenDir: string;
  /** KEY_BACKEND=pkcs11 and its PKCS11_* variables for this token, and SOFTHSM2_CONF. */
  env: Record<string, string>;
}

/** Whether SoftHSM2 is installed (prints the skip line when not, throws under REQUIRE_SERVICES=1). */
export function softHsmAvailable(suite: string): boolean {
  let problem: string | undefined;
  if (!existsSync(SOFTHSM_MODULE)) problem = `${SOFTHSM_MODULE} is missing`;
  else {
    try {
      execFileSync('softhsm2-util', ['--version'], { stdio: 'pipe' });
    } catch {
      problem = 'softhsm2-util is not on PATH';
    }
  }
  if (problem === undefined) return true;
  const line = `SoftHSM2 is not installed (${problem}; scripts/ensure-softhsm.sh installs it)`;
  if (REQUIRE_SERVICES) throw new Error(`${line}; REQUIRE_SERVICES=1 needs it for ${suite}`);
  console.warn(`skipped ${suite}: ${line}; set REQUIRE_SERVICES=1 to fail instead`);
  return false;
}

/** A fresh SoftHSM token in its own temporary SOFTHSM2_CONF directory. */
export function newSoftHsmToken(label = 'issuer-kit-test'): SoftHsmToken {
  const dir = tempDir();
  const tokenDir = join(dir, 'tokens');
  mkdirSync(tokenDir);
  const conf = join(dir, 'softhsm2.conf');
  writeFileSync(conf, `directories.tokendir = ${tokenDir}\nobjectstore.backend = file\nlog.level = ERROR\n`);
  const pin = '246810';
  const soPin = '135791';
  execFileSync(
    'softhsm2-util',
    ['--init-token', '--free', '--label', label, '--so-pin', soPin, '--pin', pin],
    { env: { ...process.env, SOFTHSM2_CONF: conf }, stdio: 'pipe' },
  );
  return {
    module: SOFTHSM_MODULE,
    label,
    pin,
    soPin,
    conf,
    tokenDir,
    env: {
      SOFTHSM2_CONF: conf,
      KEY_BACKEND: 'pkcs11',
      PKCS11_MODULE: SOFTHSM_MODULE,
      PKCS11_TOKEN_LABEL: label,
      PKCS11_PIN: pin,
    },
  };
}

const PROCESS_TOKEN = Symbol.for('issuer-kit.test.softhsm-token');

/**
 * This test process's token, made on first use, with SOFTHSM2_CONF set for the library loaded
 * in this process. Test files sharing the process share it: their keys differ by kid.
 */
export function processToken(label?: string): SoftHsmToken {
  const holder = globalThis as { [PROCESS_TOKEN]?: SoftHsmToken };
  if (!holder[PROCESS_TOKEN]) {
    const token = newSoftHsmToken(label);
    process.env.SOFTHSM2_CONF = token.conf;
    holder[PROCESS_TOKEN] = token;
  }
  return holder[PROCESS_TOKEN];
}

// Run in its own process, as another PKCS#11 application (an operator's tool): argv is the
// token's label, then `set <old> <new>` (C_SetPIN as the user) or `login <pin>` (prints `ok` or
// the CKR_* the token answered).
const USER_PIN_SCRIPT = `
const pkcs11js = require('pkcs11js');
const [label, action, pin, newPin] = process.argv.slice(1);
const lib = new pkcs11js.PKCS11();
lib.load(${JSON.stringify(SOFTHSM_MODULE)});
lib.C_Initialize();
try {
  const slot = lib.C_GetSlotList(true).find((s) => lib.C_GetTokenInfo(s).label.trim() === label);
  const session = lib.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
  try {
    lib.C_Login(session, pkcs11js.CKU_USER, pin);
  } catch (err) {
    console.log(/CKR_[A-Z_]+/.exec(err.message)[0]);
    process.exit(0);
  }
  if (action === 'set') lib.C_SetPIN(session, pin, newPin);
  lib.C_Logout(session);
  console.log('ok');
} finally {
  lib.C_Finalize();
}
`;

/**
 * Logs in to the token as a new PKCS#11 application (another process, so nothing of this
 * process's library state counts) with `pin`, then changes the user PIN to `newPin` when given.
 * Resolves with `ok`, or the CKR_* code the login was refused with.
 */
export async function userPinLogin(token: SoftHsmToken, pin: string, newPin?: string): Promise<string> {
  const args = newPin === undefined ? ['login', pin] : ['set', pin, newPin];
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['-e', USER_PIN_SCRIPT, token.label, ...args],
    {
      env: { ...process.env, SOFTHSM2_CONF: token.conf },
    },
  );
  return stdout.trim();
}
