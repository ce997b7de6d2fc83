/**
 * `skein serve [--listen URL] [--token-file FILE]`: the runtime for other processes, over
 * `effect/rpc` (`src/remote/`): Effect programs through `Skein.remote`, editors through
 * `skein acp --connect`. Loopback by default (a unix socket in the home, mode 0600); TCP and
 * WebSocket need a token.
 */
import * as NodeFs from "node:fs"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Address from "../remote/Address.ts"
import * as Checks from "./Checks.ts"
import { skeinConfig } from "./Config.ts"
import * as Options from "./Options.ts"

export const signalExitCode = 0

/** A token shorter than this is refused: it could be guessed. */
const MIN_TOKEN_LENGTH = 16

/** The server's token: from `--token-file`, else `SKEIN_SERVE_TOKEN`; undefined when neither. */
export const readToken = (file: string | undefined): string | undefined => {
  if (file !== undefined) {
    let text: string
    try {
      text = NodeFs.readFileSync(file, "utf8")
    } catch {
      throw new Options.UsageError(`Cannot read the token file ${file}`)
    }
    const token = text.trim()
    if (token.length === 0) throw new Options.UsageError(`The token file ${file} is empty`)
    return token
  }
  const fromEnv = process.env["SKEIN_SERVE_TOKEN"]
  return fromEnv === undefined || fromEnv.trim() === "" ? undefined : fromEnv.trim()
}

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const parsed = yield* Effect.try({
      try: () => Options.parse(args, { ...Options.commonOptions, listen: { type: "string" }, "token-file": { type: "string" } }),
      catch: (e) => e
    })
    if (parsed.values.help === true) {
      process.stdout.write(Options.HELP)
      return 0
    }
    if (parsed.positionals.length > 0) return yield* Effect.fail(new Options.UsageError("skein serve takes no arguments"))
    const common = Options.common(parsed.values)
    Checks.home(common.home, { write: true })
    const listen = typeof parsed.values.listen === "string" ? parsed.values.listen : `unix:${nodePath.join(common.home, "skein.sock")}`
    const address = Address.parse(listen)
    if (address._tag === "invalid") return yield* Effect.fail(new Options.UsageError(address.message))
    const token = readToken(typeof parsed.values["token-file"] === "string" ? parsed.values["token-file"] : undefined)
    if (address._tag !== "unix") {
      if (token === undefined) {
        return yield* Effect.fail(new Options.UsageError(`${address._tag} needs a token: set SKEIN_SERVE_TOKEN or pass --token-file FILE`))
      }
      if (token.length < MIN_TOKEN_LENGTH) {
        return yield* Effect.fail(new Options.UsageError(`The token is too short: use at least ${MIN_TOKEN_LENGTH} characters`))
      }
    }
    const config = yield* skeinConfig(common)
    const { layerLocal } = yield* Effect.promise(() => import("../Local.ts"))
    const Serve = yield* Effect.promise(() => import("../remote/Serve.ts"))
    return yield* Effect.scoped(Effect.gen(function*() {
      yield* Layer.build(Serve.layer(address, token).pipe(Layer.provide(layerLocal(config))))
      process.stderr.write(
        `skein serve: listening on ${Address.format(address)}${address._tag !== "unix" && !Address.isLoopback(address.host) ? " (not loopback: reachable from other machines)" : ""}\n`
      )
      return yield* Effect.never
    }))
  })
