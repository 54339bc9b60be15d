/** What the database knows about itself (`environment`: the kind of start that created it). */
export interface MetaStore {
  get(key: string): Promise<string | undefined>;
  /** Writes `value` unless the key has one; returns the value now stored. */
  setIfAbsent(key: string, value: string): Promise<string>;
}
