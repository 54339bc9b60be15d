/**
 * The node arguments that start one of the kit's entries (`src/main.ts`, or a `scripts/<name>.ts`
 * that scripts/build.mjs compiles) as `npm start` and `npm run admin` do: through
 * scripts/launch.mjs, from the compiled JavaScript of the sources as they are (built once by the
 * first start, then reused). Loading the compiled files costs a start about a third less CPU than
 * compiling through tsx again, and a slow test file starts a dozen processes.
 */
export function entryArgs(entry: string, ...args: string[]): string[] {
  return ['scripts/launch.mjs', entry, ...args];
}
