/**
 * A Schema built when it is first used instead of when its module loads. Building a Schema
 * allocates its AST, and what start-up allocates survives into V8's old generation and grows its
 * young one (adr/0052): the vocabulary's and the log's Schemas that a process never uses before a
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

interface Slot {
  readonly name: string
  readonly build: () => object
  value: object | undefined
}

/** Each stand-in's Schema, by the stand-in's target: the handler below is shared by all of them. */
const slots: WeakMap<object, Slot> = new WeakMap()

const force = (target: object): object => {
  const slot = slots.get(target)!
  if (slot.value === undefined) {
    slot.value = slot.build()
    built.add(slot.name)
  }
  return slot.value
}

// Every trap answers for the built Schema. The target is an arrow function: a Schema is a
// function object (effect's `make`), so `typeof` agrees, and an arrow function has no property
// that cannot be reconfigured, so every trap may answer with the built value's own properties.
const handler: ProxyHandler<object> = {
  get: (target, key) => Reflect.get(force(target), key),
  set: (target, key, v) => Reflect.set(force(target), key, v),
  has: (target, key) => Reflect.has(force(target), key),
  ownKeys: (target) => Reflect.ownKeys(force(target)),
  getOwnPropertyDescriptor: (target, key) => {
    const descriptor = Reflect.getOwnPropertyDescriptor(force(target), key)
    return descriptor === undefined ? undefined : { ...descriptor, configurable: true }
  },
  defineProperty: (target, key, descriptor) => Reflect.defineProperty(force(target), key, descriptor),
  deleteProperty: (target, key) => Reflect.deleteProperty(force(target), key),
  getPrototypeOf: (target) => Reflect.getPrototypeOf(force(target)),
  apply: (target, self, args) => Reflect.apply(force(target) as (...a: Array<unknown>) => unknown, self, args)
}

export const schema = <S extends object>(name: string, build: () => S): S => {
  const target = () => {}
  slots.set(target, { name, build, value: undefined })
  return new Proxy(target, handler) as unknown as S
}

/**
 * A function made at its first call (a decoder of a `Lazy.schema`, say, which would build the
 * Schema where it is made), then called directly.
 */
export const fn = <F extends (...args: Array<any>) => any>(make: () => F): F => {
  let made: F | undefined
  return ((...args: Parameters<F>) => (made ??= make())(...args)) as F
}
