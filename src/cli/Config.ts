/**
 * Turns command-line options into the runtime's configuration.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Scripted from "../providers/Scripted.ts"
import * as Options from "./Options.ts"

const loadScript = (path: string | undefined) =>
  Effect.gen(function*() {
    if (path === undefined) return undefined
    const text = yield* Effect.try({
      try: () => fs.readFileSync(path, "utf8"),
      catch: () => new Options.UsageError(`Cannot read the script file ${path}`)
    })
    return yield* Scripted.parse(text, path).pipe(Effect.mapError((e) => new Options.UsageError(e.message)))
  })

export const skeinConfig = (common: Options.Common) =>
  Effect.gen(function*() {
    if (common.provider !== undefined && common.provider !== "scripted") {
      return yield* Effect.fail(new Options.UsageError(`Unknown provider "${common.provider}" (available: scripted)`))
    }
    if (common.provider === "scripted" && common.script === undefined) {
      return yield* Effect.fail(new Options.UsageError("The scripted provider needs --script FILE"))
    }
    const script = yield* loadScript(common.script)
    return {
      home: common.home,
      script,
      model: common.model,
      maxTurnRequests: common.maxTurnRequests,
      permissionTimeoutMs: common.permissionTimeoutMs,
      mode: common.mode
    }
  })

