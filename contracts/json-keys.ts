/**
 * Keys user JSON may not hold. JSON.parse keeps `"__proto__"` as an ordinary own key, but everything after it
 * treats the name specially: zod's object and record parsers drop it without a word (so a setting sent under
 * it is accepted and ignored), `Object.assign` and `obj[key] = value` make its value the object's prototype
 * (so `{"__proto__": {"learning_rate": 5}}` would be read back as a learning rate no check ever saw).
 * `constructor` and `prototype` name the same machinery one step away; in JSON that is merged onto settings
 * (config.json, ART's experimental_config) no real field is called either, so they are refused there too.
 *
 *   everywhere    (every body a door parses: tRPC inputs, /api/v1, the ART door): `__proto__`
 *   merged JSON   (config.json, experimental_config): `__proto__`, `constructor`, `prototype`
 *
 * Tool schemas at /api/v1 and the ART door may have a parameter named "constructor" or "prototype": only the
 * merged JSON refuses those. Walks with a stack of its own, not recursion, so no depth can overflow it.
 */

export const PROTO_KEY = "__proto__";
export const PROTOTYPE_KEYS: readonly string[] = [PROTO_KEY, "constructor", "prototype"];

/** Shown after the key's path: `experimental_config.__proto__: the key "__proto__" is refused: …`. */
export function prototypeKeyMessage(key: string): string {
  return `the key "${key}" is refused: it names a JavaScript object's prototype, so a value under it would be dropped unseen or change what other fields read`;
}

/** A path as a chain back to the root: built once per node, turned into an array only for the answer. */
interface PathNode {
  key: string | number;
  parent: PathNode | null;
}

function pathOf(node: PathNode): (string | number)[] {
  const out: (string | number)[] = [];
  for (let n: PathNode | null = node; n; n = n.parent) out.push(n.key);
  return out.reverse();
}

/** Where the first refused key is (the path ends with the key), or null. `keys`: what is refused (default: `__proto__`). */
export function findPrototypeKey(value: unknown, keys: readonly string[] = [PROTO_KEY]): (string | number)[] | null {
  const stack: { value: unknown; at: PathNode | null }[] = [{ value, at: null }];
  while (stack.length > 0) {
    const { value: v, at } = stack.pop()!;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], at: { key: i, parent: at } });
    } else if (v !== null && typeof v === "object") {
      // Own keys only: Object.keys lists a parsed "__proto__" (JSON.parse defines it as an own property).
      const here = Object.keys(v);
      const refused = here.find((k) => keys.includes(k));
      if (refused !== undefined) return pathOf({ key: refused, parent: at });
      for (let i = here.length - 1; i >= 0; i--) stack.push({ value: (v as Record<string, unknown>)[here[i]!], at: { key: here[i]!, parent: at } });
    }
  }
  return null;
}
