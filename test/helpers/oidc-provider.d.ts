// oidc-provider 8 ships no type declarations: the part of its API the tests use.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface ErrorContext {
    type: string;
    body: unknown;
  }
  /** The Koa context a middleware of `use` sees. */
  interface MiddlewareContext {
    path: string;
    body: unknown;
  }
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    use(middleware: (ctx: MiddlewareContext, next: () => Promise<void>) => Promise<void>): void;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }
  export type { ErrorContext };
}
