/**
 * The providers of a running agent, read again on demand: a user signs in (`skein setup` in a
 * terminal the editor opened) or out (`logout`) while `skein acp` runs, and the configuration
 * it resolved at start-up is then out of date.
 *
 * `provider`, `models` and `model` stand for whatever the configuration last read says: each
 * model call is routed by it (so a session opened before goes on with the new keys too), and
 * each new session starts with its default model and offers its catalog. `reload` reads
 * `config.json` and the environment again (`Registry.resolve`); when that fails (the file was
 * left invalid), the configuration read before stays. Reloads run one at a time.
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Path from "effect/Path"
import * as Ref from "effect/Ref"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import type { Catalog } from "./Models.ts"
import type { Provider } from "./Provider.ts"
import * as Registry from "./Registry.ts"

export interface Reloadable {
  readonly provider: Provider
  readonly models: Catalog
  /** The default model of new sessions (a catalog key). */
  readonly model: () => string | undefined
  /** Why no model can answer with the configuration last read; undefined when one can. */
  readonly unconfigured: () => string | undefined
  /** Reads the configuration again; fails (keeping the last one) when it is invalid. */
  readonly reload: Effect.Effect<void, Registry.RegistryError, FileSystem.FileSystem | Path.Path>
}

/** A live configuration that starts as `first`, resolved with `options`. */
export const make = (options: Registry.Options, first: Registry.Resolved): Reloadable => {
  const current = Ref.makeUnsafe(first)
  const now = () => Ref.getUnsafe(current)
  const lock = Semaphore.makeUnsafe(1)
  return {
    provider: {
      get name() {
        return now().provider.name
      },
      // The chosen provider's warm-up, as of now (a later reload builds a new one, cold).
      warm: Effect.suspend(() => now().provider.warm ?? Effect.void),
      stream: (request) => Stream.suspend(() => now().provider.stream(request))
    },
    models: {
      get entries() {
        return now().models.entries
      },
      get defaultModel() {
        return now().models.defaultModel
      },
      info: (model) => now().models.info(model)
    },
    model: () => now().model,
    unconfigured: () => now().setup.unconfigured,
    reload: lock.withPermits(1)(Effect.flatMap(Registry.resolve(options), (resolved) => Ref.set(current, resolved)))
  }
}
