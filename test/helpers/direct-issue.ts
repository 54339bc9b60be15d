/** The claims of the membership-v1 credential the webhook tests issue directly. */
export const ADA_CLAIMS = {
  givenName: 'Ada',
  familyName: 'Lovelace',
  memberSince: '2020-01-15',
  tier: 'gold',
  memberNumber: 7,
};

/** `POST /admin/issue-vc` fields beside `userId` and `schemaId`: SD-JWT VC, 30 days, `ADA_CLAIMS`. */
export function adaMembership(): { vct: string; expiration: string; credentialSubject: typeof ADA_CLAIMS } {
  return {
    vct: 'urn:vct:membership',
    expiration: new Date(Date.now() + 30 * 86400_000).toISOString(),
    credentialSubject: ADA_CLAIMS,
  };
}
