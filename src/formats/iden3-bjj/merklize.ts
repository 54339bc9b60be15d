import { type Hasher, MtValue, Temporal } from '@iden3/js-jsonld-merklization';
import jsonld from 'jsonld';
import { Parser, type Quad, type Term } from 'n3';
import { FIELD_ORDER, poseidonHash } from './poseidon.js';

/**
 * Merklization of a JSON-LD document as `@iden3/js-jsonld-merklization` 1.7 `Merklizer.merklizeJSONLD`
 * computes its root (same RDF entries, same keys and values, same sparse Merkle tree), without what
 * issuance does not need: the library also compacts the document and inserts entry by entry into a
 * `@iden3/js-merkletree` tree, hashing every node on the path at each insert. Here the tree is built
 * once from all leaves (the iden3 tree does not depend on insertion order), so each node is hashed
 * once, and leaves and nodes that repeat from one credential to the next (constant claims of a
 * schema) are remembered. The RDF part below follows the library's `rdf-dataset.ts`,
 * `relationship.ts`, `rdf-entry.ts` and `utils.ts` (MIT or Apache-2.0) step by step;
 * test/slow/merklize-equivalence.test.ts compares roots with the library on generated credentials.
 */

const DEFAULT_GRAPH = '@default';
const XSD = 'http://www.w3.org/2001/XMLSchema#';
const RDF_TYPE = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#type';
/** js-jsonld-merklization's tree: `new Merkletree(db, true, 40)`. */
const MAX_LEVELS = 40;

export type PathPart = string | number;

export interface MerklizeEntry {
  /** The entry's path (predicate IRIs and array indices, root first). */
  path: PathPart[];
  value: MtValueInput;
}

type MtValueInput = string | number | boolean | bigint | Temporal.Instant;

interface DatasetIdx {
  graph: string;
  idx: number;
}

const idxKey = (i: DatasetIdx) => `${i.graph}\u0000${i.idx}`;

/** `RefTp`: a node's identity when it is an IRI or a blank node, `undefined` otherwise. */
function refOf(n: Term): string | undefined {
  if (n.termType === 'NamedNode' || n.termType === 'BlankNode') return `${n.termType}\u0000${n.value}`;
  return undefined;
}

/** `getGraphName`. */
function graphNameOf(q: Quad): string {
  if (!q.graph.value) return DEFAULT_GRAPH;
  if (q.graph.termType !== 'BlankNode') throw new Error('graph node is not of BlankNode type');
  return q.graph.value;
}

/** `QuadArrKey`: graph, subject and predicate of a quad. */
function quadArrKey(q: Quad): string {
  const s = q.subject;
  if (s.termType !== 'NamedNode' && s.termType !== 'BlankNode') throw new Error('invalid subject type');
  if (q.predicate.termType !== 'NamedNode') throw new Error('invalid predicate type');
  return `${graphNameOf(q)}\u0000${s.termType}\u0000${s.value}\u0000${q.predicate.value}`;
}

type Dataset = Map<string, Quad[]>;

function quadAt(ds: Dataset, i: DatasetIdx): Quad {
  const quads = ds.get(i.graph);
  if (!quads) throw new Error('error: graph not found');
  const q = quads[i.idx];
  if (!q) throw new Error('error: quad not found');
  return q;
}

/** `RDFDataset.iterGraphsOrdered`. */
function graphsOrdered(ds: Dataset): Array<[string, Quad[]]> {
  return [...ds.keys()].sort((a, b) => a.localeCompare(b)).map((g) => [g, ds.get(g) ?? []]);
}

/** `RDFDataset.findParentInsideGraph`, then `findGraphParent`. */
function findParent(ds: Dataset, q: Quad): DatasetIdx | undefined {
  const graph = graphNameOf(q);
  const quads = ds.get(graph);
  const qKey = refOf(q.subject);
  if (quads && qKey !== undefined) {
    let found: DatasetIdx | undefined;
    for (let idx = 0; idx < quads.length; idx++) {
      const quad = quads[idx]!;
      if (quad.equals(q)) continue;
      if (refOf(quad.object) === qKey) {
        if (found) throw new Error('error: multiple parents found');
        found = { graph, idx };
      }
    }
    if (found) return found;
  }
  const gKey = refOf(q.graph);
  if (gKey === undefined) return undefined;
  if (q.graph.termType !== 'BlankNode') throw new Error('graph parent can only be a blank node');
  let found: DatasetIdx | undefined;
  for (const [g, gq] of ds) {
    for (let idx = 0; idx < gq.length; idx++) {
      const quad = gq[idx]!;
      if (quad.equals(q)) continue;
      if (refOf(quad.object) === gKey) {
        if (found) throw new Error('error: multiple parents found');
        found = { graph: g, idx };
      }
    }
  }
  if (found) return found;
  throw new Error('error: parent not found');
}

/** `Relationship`: each quad's parent quad, and each parent's children numbered in order. */
class Relationship {
  readonly parents = new Map<string, DatasetIdx>();
  readonly children = new Map<string, Map<string, number>>();

  constructor(ds: Dataset) {
    for (const [graph, quads] of graphsOrdered(ds)) {
      for (let idx = 0; idx < quads.length; idx++) {
        const q = quads[idx]!;
        const parentIdx = findParent(ds, q);
        if (!parentIdx) continue;
        this.parents.set(idxKey({ graph, idx }), parentIdx);
        const pKey = quadArrKey(quadAt(ds, parentIdx));
        let childrenM = this.children.get(pKey);
        if (!childrenM) {
          childrenM = new Map();
          this.children.set(pKey, childrenM);
        }
        const childRef = refOf(q.subject) ?? '';
        if (!childrenM.has(childRef)) childrenM.set(childRef, childrenM.size);
      }
    }
  }

  path(ds: Dataset, at: DatasetIdx, idx: number | undefined): PathPart[] {
    const k: PathPart[] = [];
    if (idx !== undefined) k.push(idx);
    k.push(predicateOf(quadAt(ds, at)));
    let next = at;
    for (;;) {
      const parentIdx = this.parents.get(idxKey(next));
      if (!parentIdx) break;
      const parent = quadAt(ds, parentIdx);
      const childrenMap = this.children.get(quadArrKey(parent));
      if (!childrenMap) throw new Error('parent mapping not found');
      const childIdx = childrenMap.get(refOf(quadAt(ds, next).subject) ?? '');
      if (childIdx === undefined) throw new Error('child not found in parents mapping');
      if (childrenMap.size === 1) k.push(predicateOf(parent));
      else k.push(childIdx, predicateOf(parent));
      next = parentIdx;
    }
    return k.reverse();
  }
}

function predicateOf(q: Quad): string {
  if (q.predicate.termType !== 'NamedNode') throw new Error('type is not IRI');
  return q.predicate.value;
}

function minMaxFromPrime(prime: bigint): { min: bigint; max: bigint } {
  const max = prime / 2n;
  return { min: max - prime + 1n, max };
}

function integerRange(xsdType: string, prime: bigint): { min: bigint; max: bigint } {
  switch (xsdType) {
    case `${XSD}positiveInteger`:
      return { min: 1n, max: prime - 1n };
    case `${XSD}nonNegativeInteger`:
      return { min: 0n, max: prime - 1n };
    case `${XSD}integer`:
      return minMaxFromPrime(prime);
    case `${XSD}negativeInteger`:
      return { min: minMaxFromPrime(prime).min, max: -1n };
    default:
      return { min: minMaxFromPrime(prime).min, max: 0n };
  }
}

const canonicalDouble = (v: number) => v.toExponential(15).replace(/(\d)0*e\+?/, '$1E');

/** `convertStringToXsdValue`: a literal's value as the merklizer hashes it. */
function xsdValue(dataType: string, valueStr: string, prime: bigint): MtValueInput {
  switch (dataType) {
    case `${XSD}boolean`:
      if (valueStr === 'false' || valueStr === '0') return false;
      if (valueStr === 'true' || valueStr === '1') return true;
      throw new Error('incorrect boolean value');
    case `${XSD}integer`:
    case `${XSD}nonNegativeInteger`:
    case `${XSD}nonPositiveInteger`:
    case `${XSD}negativeInteger`:
    case `${XSD}positiveInteger`: {
      const int = BigInt(valueStr);
      const { min, max } = integerRange(dataType, prime);
      if (int > max) throw new Error(`integer exceeds maximum value: ${int}`);
      if (int < min) throw new Error(`integer is below minimum value: ${int}`);
      return int;
    }
    case `${XSD}dateTime`:
      if (Number.isNaN(Date.parse(valueStr))) throw new Error(`error: error parsing time string ${valueStr}`);
      if (/^\d{4}-\d{2}-\d{2}$/.test(valueStr))
        return Temporal.Instant.from(new Date(valueStr).toISOString());
      return Temporal.Instant.from(valueStr);
    case `${XSD}double`:
      return canonicalDouble(Number.parseFloat(valueStr));
    default:
      return valueStr;
  }
}

/** `RDFDataset.fromDocument`: the canonical (URDNA2015) quads of the document, by graph. */
async function datasetOf(doc: unknown, documentLoader: unknown): Promise<Dataset> {
  const nquads = await jsonld.canonize(doc, { format: 'application/n-quads', documentLoader });
  const ds: Dataset = new Map();
  for (const q of new Parser({ format: 'application/n-quads' }).parse(nquads)) {
    const graph = q.graph.termType === 'DefaultGraph' ? DEFAULT_GRAPH : q.graph.value;
    const quads = ds.get(graph);
    if (quads) quads.push(q);
    else ds.set(graph, [q]);
  }
  return ds;
}

/** `RDFEntry.fromDataSet`: one entry per quad that is not a link to a child node. */
export async function merklizeEntries(doc: unknown, documentLoader: unknown): Promise<MerklizeEntry[]> {
  const ds = await datasetOf(doc, documentLoader);
  if (!ds.get(DEFAULT_GRAPH)?.length) throw new Error('@default graph not found in dataset');
  const rs = new Relationship(ds);
  const entries: MerklizeEntry[] = [];
  for (const [graph, quads] of graphsOrdered(ds)) {
    const counts = new Map<string, number>();
    for (const q of quads) {
      const k = quadArrKey(q);
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    const seen = new Map<string, number>();
    for (let quadIdx = 0; quadIdx < quads.length; quadIdx++) {
      const q = quads[quadIdx]!;
      const qKey = quadArrKey(q);
      let value: MtValueInput;
      switch (q.object.termType) {
        case 'Literal':
          value = xsdValue(q.object.datatype?.value ?? '', q.object.value, FIELD_ORDER);
          break;
        case 'NamedNode':
        case 'Variable':
          value = q.object.value;
          break;
        case 'BlankNode':
          if (rs.children.has(qKey)) continue;
          throw new Error('BlankNode is not supported yet');
        default:
          throw new Error("unexpected Quad's Object type");
      }
      let idx: number | undefined;
      if ((counts.get(qKey) ?? 0) > 1) {
        idx = seen.get(qKey) ?? 0;
        seen.set(qKey, idx + 1);
      }
      entries.push({ path: rs.path(ds, { graph, idx: quadIdx }, idx), value });
    }
  }
  return entries;
}

/** The sparse Merkle tree of `@iden3/js-merkletree` (leaf `H(k, v, 1)`, node `H(l, r)`, empty 0), built at once. */
export class SparseMerkleTreeBuilder {
  readonly #hash: (inputs: bigint[]) => bigint;

  constructor(hash: (inputs: bigint[]) => bigint = poseidonHash) {
    this.#hash = hash;
  }

  root(leaves: ReadonlyArray<readonly [bigint, bigint]>): bigint {
    const keys = new Set<bigint>();
    for (const [k] of leaves) {
      if (keys.has(k)) throw new Error('the entry index already exists in the tree');
      keys.add(k);
    }
    return this.#node(leaves, 0);
  }

  #node(leaves: ReadonlyArray<readonly [bigint, bigint]>, level: number): bigint {
    if (leaves.length === 0) return 0n;
    if (leaves.length === 1) {
      const [k, v] = leaves[0]!;
      return this.#hash([k, v, 1n]);
    }
    // js-merkletree pushLeaf: two leaves may share at most MAX_LEVELS - 2 path bits.
    if (level > MAX_LEVELS - 2) throw new Error('reached maximum level of the merkle tree');
    const left: Array<readonly [bigint, bigint]> = [];
    const right: Array<readonly [bigint, bigint]> = [];
    for (const leaf of leaves) ((leaf[0] >> BigInt(level)) & 1n ? right : left).push(leaf);
    return this.#hash([this.#node(left, level + 1), this.#node(right, level + 1)]);
  }
}

/**
 * Merklization root of `doc` (a JSON-LD document without `proof`), with `hasher` for path keys and
 * values (the library's `Hasher` contract) and `treeHash` for tree nodes.
 */
export async function merklizedRoot(
  entries: readonly MerklizeEntry[],
  hasher: Hasher,
  tree: SparseMerkleTreeBuilder,
): Promise<bigint> {
  const leaves: Array<readonly [bigint, bigint]> = [];
  for (const e of entries) {
    const parts: bigint[] = [];
    for (const p of e.path) {
      parts.push(typeof p === 'number' ? BigInt(p) : await hasher.hashBytes(new TextEncoder().encode(p)));
    }
    leaves.push([await hasher.hash(parts), await MtValue.mkValueMtEntry(hasher, e.value)]);
  }
  return tree.root(leaves);
}

/** The subject type IRI: the value of the one `credentialSubject` → `rdf:type` entry. */
export function subjectTypeIri(entries: readonly MerklizeEntry[], credentialSubjectIri: string): unknown {
  const found = entries.filter(
    (e) => e.path.length === 2 && e.path[0] === credentialSubjectIri && e.path[1] === RDF_TYPE,
  );
  return found.length === 1 ? found[0]!.value : undefined;
}
