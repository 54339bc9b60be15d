import { z } from 'zod';

/**
 * SD-JWT VC's schema-file block (docs/schemas-and-claims.md), which the formats' schema file
 * (src/formats/schema-file.ts) includes: it imports zod alone.
 */

export const DisclosureFrameSchema = z.record(z.string(), z.unknown());

const cssColor = z.string().regex(/^#[0-9A-Fa-f]{6}$/, 'must be an RGB colour like #1A2B3C');

/**
 * draft-ietf-oauth-sd-jwt-vc "Type Metadata" display entry, in the draft's own shape: one per
 * locale, with the simple rendering (colours, logo).
 */
export const TypeDisplaySchema = z.object({
  locale: z.string().regex(/^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/, 'must be a BCP 47 language tag'),
  name: z.string().min(1),
  description: z.string().optional(),
  rendering: z
    .object({
      simple: z
        .object({
          logo: z.object({ uri: z.url(), alt_text: z.string().optional() }).optional(),
          background_color: cssColor.optional(),
          text_color: cssColor.optional(),
        })
        .optional(),
    })
    .optional(),
});
export type TypeDisplay = z.infer<typeof TypeDisplaySchema>;

/** docs/schemas-and-claims.md: the schema file's `sdJwt` block. */
export const SdJwtBlockSchema = z.object({
  // Optional: the loader fills in `IssuerUrls.vct` (docs/schemas-and-claims.md "The vct").
  vct: z.string().min(1).optional(),
  disclosureFrame: DisclosureFrameSchema.optional(),
  /** Type metadata display (SD-JWT VC draft "Type Metadata"); without it, `title` and `description` are used. */
  display: z.array(TypeDisplaySchema).min(1).optional(),
});
export type SdJwtBlock = z.infer<typeof SdJwtBlockSchema>;

declare module '../../schemas/schema-file.js' {
  interface SchemaFileBlocks {
    sdJwt?: SdJwtBlock | undefined;
  }
  interface LoadedSchemaBlocks {
    /** Always present once loaded, with `vct`: the file's, else `IssuerUrls.vct`. */
    sdJwt: SdJwtBlock & { vct: string };
  }
}
