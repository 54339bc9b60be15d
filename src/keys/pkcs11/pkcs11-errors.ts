/** Whether a thrown value came from the PKCS#11 library (a CKR_* code). */
export function isPkcs11Error(err: unknown): boolean {
  return /CKR_|Pkcs11/i.test(`${(err as Error)?.name ?? ''} ${(err as Error)?.message ?? ''}`);
}

/** The CKR_* name of a PKCS#11 error, never anything else it may carry. */
export function pkcs11Reason(err: unknown): string {
  const m = /CKR_[A-Z_]+/.exec((err as Error)?.message ?? '');
  return m ? m[0] : ((err as Error)?.message ?? String(err)).split('\n')[0]!;
}
