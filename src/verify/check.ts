/** One verified property of a credential: a PASS, or a FAIL with a stable `code`. */
export interface Check {
  check: string;
  ok: boolean;
  /** Stable reason of a FAIL (`SIGNATURE_INVALID`, `DISCLOSURE_UNREFERENCED`, …). */
  code?: string;
  detail: string;
}

export interface VerifyResult {
  ok: boolean;
  format: 'sd-jwt-vc' | 'iden3' | 'mso-mdoc' | 'unknown';
  checks: Check[];
  /** The claims the credential shows, once its disclosures are processed. */
  claims?: Record<string, unknown>;
}

/** A refusal: carries the code the check reports. */
export class CheckFailure extends Error {
  override name = 'CheckFailure';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Collects checks in order; `run` turns a thrown `CheckFailure` (or any error) into a FAIL. */
export class Checks {
  readonly list: Check[] = [];

  pass(check: string, detail: string): void {
    this.list.push({ check, ok: true, detail });
  }

  fail(check: string, code: string, detail: string): void {
    this.list.push({ check, ok: false, code, detail });
  }

  /** Runs one check; its answer is the PASS detail. Answers whether it passed. */
  async run(
    check: string,
    fn: () => Promise<string> | string,
    fallbackCode = 'CHECK_FAILED',
  ): Promise<boolean> {
    try {
      this.pass(check, await fn());
      return true;
    } catch (err) {
      if (err instanceof CheckFailure) this.fail(check, err.code, err.message);
      else this.fail(check, fallbackCode, (err as Error)?.message ?? String(err));
      return false;
    }
  }

  get ok(): boolean {
    return this.list.length > 0 && this.list.every((c) => c.ok);
  }
}

export const refuse = (code: string, message: string): never => {
  throw new CheckFailure(code, message);
};
