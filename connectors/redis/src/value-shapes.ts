/**
 * How a record becomes the value of its key: a string, a JSON document (stored as a string),
 * or fields of a hash (HSET: the record's fields are set, other fields of the hash stay).
 * Values are strings or finite numbers (hash fields also booleans): Redis would store NaN or
 * Infinity as that text, so they are refused, and so are strings with a lone surrogate (see
 * `strings.ts`). A JSON document is `JSON.stringify`'s text, refused where that would store a
 * value changed (`json-documents.ts`); it escapes lone surrogates, so those are kept.
 * docs/connectors/redis.md has a table of what each shape does with every kind of value.
 */
import { ConfigurationError } from "@exactly/core";
import { jsonDocument } from "./json-documents.ts";
import { hasUtf8Form, NO_UTF8_FORM } from "./strings.ts";

export type ValueShape<T> =
  | { readonly shape: "string"; readonly of: (record: T) => string | number }
  | { readonly shape: "json"; readonly of?: (record: T) => unknown }
  | { readonly shape: "hash"; readonly fields: (record: T) => Readonly<Record<string, string | number | boolean>> };

/** A shape checked once: the script's shape argument, and the value arguments of a record. */
export interface CompiledShape<T> {
  readonly script: "string" | "hash";
  /** The value arguments of one write: [value], or [field, value, field, value …]. Throws for a record it cannot encode. */
  readonly encode: (record: T) => (string | number)[];
}

export function compileShape<T>(value: ValueShape<T>, setting = "value"): CompiledShape<T> {
  switch (value?.shape) {
    case "string": {
      const of = value.of;
      return {
        script: "string",
        encode: (record) => {
          const v = of(record);
          if (typeof v !== "string" && !(typeof v === "number" && Number.isFinite(v)))
            throw new Error(`value ${String(v)} is not a string or a finite number`);
          if (typeof v === "string" && !hasUtf8Form(v)) throw new Error(`the value ${NO_UTF8_FORM}`);
          return [v];
        },
      };
    }
    case "json": {
      const of = value.of ?? ((record: T) => record);
      return {
        script: "string",
        encode: (record) => [jsonDocument(of(record))],
      };
    }
    case "hash": {
      const fields = value.fields;
      return {
        script: "hash",
        encode: (record) => {
          const args: (string | number)[] = [];
          for (const [field, v] of Object.entries(fieldsObject(fields(record)))) {
            if (typeof v !== "string" && typeof v !== "boolean" && !(typeof v === "number" && Number.isFinite(v)))
              throw new Error(`field ${JSON.stringify(field)}: ${String(v)} is not a string, finite number or boolean`);
            if (!hasUtf8Form(field) || (typeof v === "string" && !hasUtf8Form(v)))
              throw new Error(`field ${JSON.stringify(field)}: ${NO_UTF8_FORM}`);
            args.push(field, typeof v === "boolean" ? String(v) : v);
          }
          if (args.length === 0) throw new Error("a hash needs at least one field");
          return args;
        },
      };
    }
    default:
      throw new ConfigurationError(`${setting}.shape`, 'must be "string", "json" or "hash"');
  }
}

/**
 * The fields of a hash: an object's own properties. An array, a Buffer or a typed array would
 * give fields "0", "1", … of its elements, and a Map or Set none: refused, as not what was meant.
 */
function fieldsObject(fields: unknown): object {
  if (typeof fields === "object" && fields !== null) {
    const kind = Array.isArray(fields)
      ? "an array"
      : Buffer.isBuffer(fields)
        ? "a Buffer"
        : ArrayBuffer.isView(fields)
          ? `a ${fields.constructor.name}`
          : fields instanceof Map
            ? "a Map"
            : fields instanceof Set
              ? "a Set"
              : undefined;
    if (kind === undefined) return fields;
    throw new Error(`fields (${kind}) are not an object of fields`);
  }
  throw new Error(`fields (${fields === null ? "null" : `a ${typeof fields}`}) are not an object of fields`);
}
