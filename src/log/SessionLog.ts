/**
 * The session store as a service: where sessions are kept, behind one interface (`Store.ts`).
 *
 * - `SessionLog.layer(config)`: NDJSON files under `$SKEIN_HOME/sessions`, locked against a
 *   second process, crash-safe (`FileStore.ts`). Skein's default.
 * - `SessionLog.layerMemory(options)`: the same lines in this process's memory
 *   (`MemoryStore.ts`), for embedders who want no files and for tests that are not about
 *   the disk. Sessions last as long as the layer's store (pass `sessions` to share one).
 *
 * The runtime takes whichever layer it is given; nothing else changes.
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as FileStore from "./FileStore.ts"
import * as MemoryStore from "./MemoryStore.ts"
import type { Store } from "./Store.ts"

export class SessionLog extends Context.Service<SessionLog, Store>()("skein/log/SessionLog") {
  /** Logs as files under `<home>/sessions`. */
  static readonly layer = (config: FileStore.Config) => Layer.effect(SessionLog, FileStore.make(config))
  /** Logs in memory: no file is read or written. */
  static readonly layerMemory = (options?: MemoryStore.Options) => Layer.effect(SessionLog, MemoryStore.make(options))
}
