// The two pieces of jsonld.js and n3 the merklizer uses (neither ships its own types).
declare module 'jsonld' {
  const jsonld: {
    canonize(input: unknown, options: { format: string; documentLoader: unknown }): Promise<string>;
  };
  export default jsonld;
}

declare module 'n3' {
  export interface Term {
    termType: string;
    value: string;
    datatype?: Term;
    equals(other: Term | null | undefined): boolean;
  }
  export interface Quad extends Term {
    subject: Term;
    predicate: Term;
    object: Term;
    graph: Term;
  }
  export class Parser {
    constructor(options: { format: string });
    parse(input: string): Quad[];
  }
}
