/**
 * Tells the launcher (dist/skein.mjs) that this run has done real work, so the code cache it
 * writes at exit holds what a start-up compiles. Does nothing when the CLI runs without the
 * launcher (tests, embedding).
 */
const key = Symbol.for("skein.codeCache.warm")

export const markWarm = (): void => {
  const hook = (globalThis as Record<symbol, unknown>)[key]
  if (typeof hook === "function") hook()
}
