/** Views of kafkajs's internal objects with some of their methods replaced, the objects themselves unchanged. */

/** `target` with `overrides` in place of some of its methods; every other method runs on `target` itself. */
export function withMethods<T extends object>(target: T, overrides: Readonly<Record<string, unknown>>): T {
  return new Proxy(target, {
    get(object, property) {
      if (typeof property === "string" && Object.hasOwn(overrides, property)) return overrides[property];
      const value = Reflect.get(object, property, object);
      return typeof value === "function" ? value.bind(object) : value;
    },
  });
}
