/**
 * A Schema built when it is first used instead of when its module loads. Building a Schema
 * allocates its AST, and what start-up allocates survives into V8's old generation and grows its
 * young one (adr/0050): the vocabulary's and the log's Schemas that a process never uses before a
 * session works (a turn's events, MCP settings, questions) wait for that use.
 *
 * `Lazy.schema(name, build)` is a stand-in with the Schema's own type: reading anything of it
 * (`.ast`, `.fields`, `.members`, `.pipe`…, as `Schema.decode*`, `Schema.is` or another Schema
 * that contains it do) builds the Schema once, and every later use goes to that one. Only for
 * values that are objects or functions and used as such (not with `===` against the built
 * value, which no caller ever sees).
 *
 * The names of the Schemas built so far are visible to tests at `Symbol.for("skein.lazySchemas")`
 * (test/fixtures/modules-probe.mjs reads them at each answer `skein acp` writes).
 */
const built: Set<string> = new Set()
;(globalThis as Record<symbol, unknown>)[Symbol.for("skein.lazySchemas")] = built

/** Whether the Schema named `name` was built (a test's question). */
export const isBuilt = (name: string): boolean => built.has(name)

export const schema = <S extends object>(name: string, build: () => S): S => {
  let value: S | undefined
  const force = (): S => {
    if (value === undefined) {
      value = build()
      built.add(name)
    }
    return value
  }
  // A Schema is a function object (effect's `make`): the target is one too, so `typeof` agrees.
  // An arrow function has no property that cannot be reconfigured, so every trap may answer
  // with the built value's own properties.
  const target = (() => {}) as unknown as S
  return new Proxy(target, {
    get: (_, key) => Reflect.get(force(), key),
    set: (_, key, v) => Reflect.set(force(), key, v),
    has: (_, key) => Reflect.has(force(), key),
    ownKeys: () => Reflect.ownKeys(force()),
    getOwnPropertyDescriptor: (_, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(force(), key)
      return descriptor === undefined ? undefined : { ...descriptor, configurable: true }
    },
    defineProperty: (_, key, descriptor) => Reflect.defineProperty(force(), key, descriptor),
    deleteProperty: (_, key) => Reflect.deleteProperty(force(), key),
    getPrototypeOf: () => Reflect.getPrototypeOf(force()),
    apply: (_, self, args) => Reflect.apply(force() as (...a: Array<unknown>) => unknown, self, args)
  })
}

/**
 * A function made at its first call (a decoder of a `Lazy.schema`, say, which would build the
 * Schema where it is made), then called directly.
 */
export const fn = <F extends (...args: Array<any>) => any>(make: () => F): F => {
  let made: F | undefined
  return ((...args: Parameters<F>) => (made ??= make())(...args)) as F
}
