/**
 * Key names. Every key a sink writes starts with its `keyPrefix`. Each data key has a version
 * key beside it, in the same hash slot, so one script call can read and write both on a
 * Redis Cluster too: `<key>:exactly-version` when the key carries a hash tag (`{…}`), else
 * `{<key>}:exactly-version`, whose tag is the key itself. The write-ahead sink keeps its
 * markers at `<keyPrefix>exactly-wal:<name>:<subtask>`, and in a sharded job the upsert sink
 * its fences at `<keyPrefix>{<tag>}exactly-wal:<sink>:fences` (`fences.ts`).
 *
 * Those names are reserved: a record's key (prefix included) that ends in `:exactly-version`
 * or holds `exactly-wal:` is refused by every Redis sink, so no record can overwrite a version
 * (later writes to its key would be dropped as older) or a marker (a checkpoint would be
 * applied twice or not at all), whether of its own sink or of another sink sharing the prefix.
 */
import { ConfigurationError } from "@exactly/core";

export const VERSION_SUFFIX = ":exactly-version";
export const MARKER_NAMESPACE = "exactly-wal:";

/** The hash tag a key is placed by, as Redis Cluster finds it; undefined if it has none. */
export function hashTag(key: string): string | undefined {
  const open = key.indexOf("{");
  if (open < 0) return undefined;
  const close = key.indexOf("}", open + 1);
  if (close < 0 || close === open + 1) return undefined;
  return key.slice(open + 1, close);
}

export function versionKeyOf(key: string): string {
  return hashTag(key) === undefined ? `{${key}}${VERSION_SUFFIX}` : `${key}${VERSION_SUFFIX}`;
}

/**
 * The other key whose version key `key`'s would be, or undefined. Version keys are one per key
 * except here: a key `{X}` whose tag is not X's own (X has no hash tag) has the version key
 * `{X}:exactly-version`, which is X's too. Under one prefix that takes a prefix of only "{"
 * (refused); across two sinks, one under "p:" and one under "{p:", any key of the first.
 */
export function sharesVersionKeyWith(key: string): string | undefined {
  if (key.length < 3 || key.charCodeAt(0) !== 123 /* { */ || key.charCodeAt(key.length - 1) !== 125 /* } */)
    return undefined;
  const inner = key.slice(1, -1);
  return hashTag(key) !== undefined && hashTag(inner) === undefined ? inner : undefined;
}

/** Escapes Redis' glob characters, so a SCAN MATCH pattern built on `text` matches it literally. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}

/**
 * The reserved-name check for keys under one prefix, prepared once per sink: for each record
 * it costs a substring search and an `endsWith`, allocating nothing.
 */
export class ReservedNames {
  private readonly prefix: string;
  /** What a key must start with to complete a marker namespace begun at the prefix's end. */
  private readonly markerRests: readonly string[];

  constructor(prefix: string) {
    if (prefix.includes(MARKER_NAMESPACE))
      throw new ConfigurationError(
        "keyPrefix",
        `must not hold "${MARKER_NAMESPACE}", the write-ahead markers' namespace`,
      );
    this.prefix = prefix;
    const rests: string[] = [];
    for (let n = 1; n < MARKER_NAMESPACE.length; n++) {
      if (prefix.endsWith(MARKER_NAMESPACE.slice(0, n))) rests.push(MARKER_NAMESPACE.slice(n));
    }
    this.markerRests = rests;
  }

  /** Why `<prefix><key>` is a reserved name, or undefined if a record may write it. */
  check(key: string): string | undefined {
    let marker = key.includes(MARKER_NAMESPACE);
    for (let i = 0; !marker && i < this.markerRests.length; i++) marker = key.startsWith(this.markerRests[i] as string);
    if (marker)
      return `key ${JSON.stringify(this.prefix + key)} is in "${MARKER_NAMESPACE}", the namespace reserved for the write-ahead sink's markers`;
    if (
      key.length >= VERSION_SUFFIX.length
        ? key.endsWith(VERSION_SUFFIX)
        : VERSION_SUFFIX.endsWith(key) &&
          this.prefix.endsWith(VERSION_SUFFIX.slice(0, VERSION_SUFFIX.length - key.length))
    )
      return `key ${JSON.stringify(this.prefix + key)} ends in "${VERSION_SUFFIX}", the suffix reserved for the upsert sink's version keys`;
    return undefined;
  }
}
