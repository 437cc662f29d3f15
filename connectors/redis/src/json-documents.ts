/**
 * The text the `json` value shape stores: `JSON.stringify`'s, for a value it writes as it is.
 * JSON.stringify changes some values without a word, and reading the text back would give
 * another value than the record held: NaN, ±Infinity and an invalid Date become `null`, a
 * Map or Set becomes `{}`, a Buffer `{"type":"Buffer","data":[…]}`, a typed array an object of
 * its elements, a function or symbol is left out of an object and becomes `null` in an array,
 * and so does `undefined` in an array. Such a value is refused, wherever it is nested, naming
 * its path. What JSON does on purpose stays: an `undefined` property is left out (absent), a
 * valid Date is its ISO text, an object with `toJSON` is what that returns (checked the same
 * way), and a lone surrogate is escaped (`\ud800`), which JSON.parse reads back as it was.
 *
 * The text comes from JSON.stringify without a replacer, which V8 runs on its fast path; the
 * check is a walk of the value beside it (a replacer made stringify about 2.5 times slower).
 */

/** Objects JSON.stringify writes as something else: how a message names one, and what it would store. */
const CHANGED_OBJECTS: readonly [test: (v: object) => boolean, name: (v: object) => string, stored: string][] = [
  [(v) => v instanceof Map, () => "a Map", "{}"],
  [(v) => v instanceof Set, () => "a Set", "{}"],
  [(v) => v instanceof WeakMap, () => "a WeakMap", "{}"],
  [(v) => v instanceof WeakSet, () => "a WeakSet", "{}"],
  [(v) => v instanceof RegExp, () => "a RegExp", "{}"],
  [(v) => v instanceof Error, () => "an Error", "{}"],
  [(v) => v instanceof Promise, () => "a Promise", "{}"],
  [(v) => v instanceof ArrayBuffer || v instanceof SharedArrayBuffer, () => "an ArrayBuffer", "{}"],
  [(v) => ArrayBuffer.isView(v), (v) => `a ${v.constructor.name}`, "an object of its elements"],
];

/** Deeper than this, a value is refused rather than walked (JSON.stringify found no cycle). */
const MAX_DEPTH = 1000;

class Changed extends Error {}

/** The JSON text of `value`, or an Error saying what in it JSON.stringify would store changed, and where. */
export function jsonDocument(value: unknown): string {
  // First: it throws for a cycle and a bigint, with its own words.
  const text = JSON.stringify(value);
  if (text === undefined) throw new Error(`the value (${describe(value)}) has no JSON form`);
  const path: (string | number)[] = [];
  try {
    check(value, "", false, path);
  } catch (error) {
    if (error instanceof Changed) throw new Error(error.message.replace("<path>", pathText(path)));
    throw error;
  }
  return text;
}

/**
 * Throws `Changed` for a value JSON.stringify would store changed. `key` is its key in its
 * holder (for `toJSON`), `inArray` whether the holder is an array; `path` holds the keys down
 * to it, and is left at the offending value when this throws.
 */
function check(value: unknown, key: string, inArray: boolean, path: (string | number)[]): void {
  switch (typeof value) {
    case "string":
    case "boolean":
      return;
    case "number":
      if (!Number.isFinite(value)) throw changed(String(value), "store null");
      return;
    case "undefined":
      // An undefined property is left out, as absent; in an array it would become null.
      if (inArray) throw changed("undefined", "store null");
      return;
    case "function":
    case "symbol":
      throw changed(`a ${typeof value}`, inArray ? "store null" : "leave it out");
    case "bigint":
      // JSON.stringify throws for a bigint, unless BigInt.prototype.toJSON is defined: that is the user's choice.
      return;
  }
  if (value === null) return;
  if (path.length > MAX_DEPTH) throw new Changed(`the value at <path> is nested more than ${MAX_DEPTH} levels deep`);
  const object = value as object;
  if (object instanceof Date) {
    if (Number.isNaN(object.getTime())) throw changed("an invalid Date", "store null");
    return;
  }
  // Node's own toJSON writes a Buffer as an object of its bytes.
  if (Buffer.isBuffer(object)) throw changed("a Buffer", 'store {"type":"Buffer","data":[…]}');
  const toJSON = (object as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === "function") {
    check(toJSON.call(object, key), key, inArray, path);
    return;
  }
  for (const [test, name, stored] of CHANGED_OBJECTS) if (test(object)) throw changed(name(object), `store ${stored}`);
  if (object instanceof Number || object instanceof String || object instanceof Boolean) {
    check(object.valueOf(), key, inArray, path);
    return;
  }
  if (Array.isArray(object)) {
    for (let i = 0; i < object.length; i++) {
      path.push(i);
      check(object[i], String(i), true, path);
      path.pop();
    }
    return;
  }
  for (const name of Object.keys(object)) {
    path.push(name);
    check((object as Record<string, unknown>)[name], name, false, path);
    path.pop();
  }
}

function changed(what: string, would: string): Changed {
  return new Changed(`${what} at <path> has no JSON form: JSON.stringify would ${would}`);
}

/** `$`, `$.a`, `$[0]`, `$["b c"]`: where in the value a refused part sits. */
function pathText(path: readonly (string | number)[]): string {
  let text = "$";
  for (const key of path) {
    if (typeof key === "number") text += `[${key}]`;
    else text += /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
  }
  return text;
}

function describe(value: unknown): string {
  return typeof value === "function" || typeof value === "symbol" ? `a ${typeof value}` : String(value);
}
