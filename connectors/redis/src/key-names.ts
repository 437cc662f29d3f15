/**
 * Key names. Every key a sink writes starts with its `keyPrefix`. Each data key has a version
 * key beside it, in the same hash slot, so one script call can read and write both on a
 * Redis Cluster too: `<key>:exactly-version` when the key carries a hash tag (`{…}`), else
 * `{<key>}:exactly-version`, whose tag is the key itself.
 */

/** The hash tag a key is placed by, as Redis Cluster finds it; undefined if it has none. */
export function hashTag(key: string): string | undefined {
  const open = key.indexOf("{");
  if (open < 0) return undefined;
  const close = key.indexOf("}", open + 1);
  if (close < 0 || close === open + 1) return undefined;
  return key.slice(open + 1, close);
}

export function versionKeyOf(key: string): string {
  return hashTag(key) === undefined ? `{${key}}:exactly-version` : `${key}:exactly-version`;
}
