/**
 * What the launcher (dist/skein.mjs) tells of its V8 code cache, and the hooks that tell it
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
}

const key = Symbol.for("skein.codeCache")

export const status = (): Status | undefined => {
  const value = (globalThis as Record<symbol, unknown>)[key]
  return typeof value === "object" && value !== null ? (value as Status) : undefined
}

export const markWarm = (): void => status()?.markWarm()

export const snapshotSoon = (): void => status()?.snapshotSoon()

/** One line for people: where the cache is and whether this run used it. */
export const describe = (s: Status | undefined): string =>
  s === undefined
    ? "none (not started through dist/skein.mjs)"
    : s.disabled
    ? "off (SKEIN_NO_CODE_CACHE)"
    : s.file === undefined
    ? "off: the directory is not usable (it must be yours and not writable by others)"
    : `${s.file}: ${s.loaded ? "used" : "not used (missing or out of date: the next 'skein acp' or 'skein run' that serves writes it)"}`
