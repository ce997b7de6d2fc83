/**
 * What the launcher (dist/skein.cjs, or dist/skein.mjs) tells of its V8 code cache, and the hooks that tell it
 * when to take one: this run has done real work (`markWarm`: a cache taken at exit holds what
 * a start-up compiles), or start-up is over (`snapshotSoon`: take it shortly). Without the
 * launcher (tests, embedding) there is no status and the hooks do nothing.
 */
interface Status {
  /** SKEIN_NO_CODE_CACHE is set. */
  readonly disabled: boolean
  /** The cache directory, unless it is off or unusable (not ours, or writable by others). */
  readonly directory: string | undefined
  /** This command's cache file. */
  readonly file: string | undefined
  /** Whether this run started from the cache. */
  readonly loaded: boolean
  readonly markWarm: () => void
  /** Start-up is over: the launcher takes the cache shortly (instead of at exit). */
  readonly snapshotSoon: () => void
  /** `hook` runs right before the cache is taken; what it returns, right after. */
  readonly aroundWrite: (hook: () => () => void) => void
}

const key = Symbol.for("skein.codeCache")

export const status = (): Status | undefined => {
  const value = (globalThis as Record<symbol, unknown>)[key]
  return typeof value === "object" && value !== null ? (value as Status) : undefined
}

export const markWarm = (): void => status()?.markWarm()

export const snapshotSoon = (): void => status()?.snapshotSoon()

const flagsSet = new Map<string, { readonly initial: string; current: string }>()

/**
 * Sets V8's flag `--name=value` at run time; `initial` is its value when the process started.
 * V8 ties a code cache to its flags: a cache taken with a flag changed is rejected by every
 * start that has the flag as it was, so the flag is put back to `initial` while the launcher
 * takes the cache, and set again right after.
 */
export const setV8Flag = (v8: { readonly setFlagsFromString: (flags: string) => void }, name: string, value: string, initial: string): void => {
  const known = flagsSet.get(name)
  if (known === undefined) {
    const flag = { initial, current: value }
    flagsSet.set(name, flag)
    status()?.aroundWrite((): () => void => {
      if (flag.current === flag.initial) return () => {}
      v8.setFlagsFromString(`--${name}=${flag.initial}`)
      return () => v8.setFlagsFromString(`--${name}=${flag.current}`)
    })
  } else {
    known.current = value
  }
  v8.setFlagsFromString(`--${name}=${value}`)
}

/** One line for people: where the cache is and whether this run used it. */
export const describe = (s: Status | undefined): string =>
  s === undefined
    ? "none (not started through the launcher, dist/skein.cjs or dist/skein.mjs)"
    : s.disabled
    ? "off (SKEIN_NO_CODE_CACHE)"
    : s.file === undefined
    ? "off: the directory is not usable (it must be yours and not writable by others)"
    : `${s.file}: ${s.loaded ? "used" : "not used (missing or out of date: the next 'skein acp' or 'skein run' that serves writes it)"}`
