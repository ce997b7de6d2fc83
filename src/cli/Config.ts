/**
 * Turns command-line options into the runtime's configuration: the scripted
 * provider with `--script`, else the providers of the environment and
 * `$SKEIN_HOME/config.json` (see `providers/Registry.ts`).
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as SandboxSettings from "../sandbox/Settings.ts"
import * as McpConfig from "../mcp/Config.ts"
import * as Registry from "../providers/Registry.ts"
import * as Scripted from "../providers/Scripted.ts"
import * as Options from "./Options.ts"
import * as Secrets from "../secrets/Secrets.ts"

const loadScript = (path: string) =>
  Effect.gen(function*() {
    const text = yield* Effect.try({
      try: () => fs.readFileSync(path, "utf8"),
      catch: () => new Options.UsageError(`Cannot read the script file ${path}`)
    })
    return yield* Scripted.parse(text, path).pipe(Effect.mapError((e) => new Options.UsageError(oneLine(e.message))))
  })

/**
 * A schema's report on one line: its first problem with where it is
 * (`Expected array at ["turns"]`), and how many more there are.
 */
const oneLine = (message: string): string => {
  const lines = message.split("\n").map((line) => line.trim()).filter((line) => line !== "")
  if (lines.length <= 1) return message
  const [first, second] = lines
  const located = second !== undefined && second.startsWith("at ") ? `${first} ${second}` : first!
  const more = lines.filter((line) => !line.startsWith("at ")).length - 1
  return more > 0 ? `${located} (and ${more} more problem${more === 1 ? "" : "s"})` : located
}

export const loadScriptFile = loadScript

/** `SKEIN_COMPACT_AT`: the share of the context window (0.1–0.95) at which a conversation is compacted; anything else is ignored. */
const compactAtFromEnv = (raw: string | undefined): number | undefined => {
  const value = raw === undefined ? NaN : Number(raw)
  return Number.isFinite(value) && value >= 0.1 && value <= 0.95 ? value : undefined
}

/**
 * The sandbox's settings: `--sandbox`, else `SKEIN_SANDBOX`, else `<home>/config.json`'s
 * `sandbox` (whose host and path lists hold either way). A value that is not understood is a
 * usage error: the sandbox is never weaker than asked. An unreadable config.json is reported
 * by `skein doctor`; here it counts as saying nothing.
 */
export const sandboxSettings = (common: Options.Common): Effect.Effect<SandboxSettings.Settings, Options.UsageError> =>
  Effect.gen(function*() {
    let file: unknown
    try {
      file = (JSON.parse(fs.readFileSync(nodePath.join(common.home, "config.json"), "utf8")) as Record<string, unknown> | null)?.["sandbox"]
    } catch {
      file = undefined
    }
    const fromFile = SandboxSettings.fromConfig(file, os.homedir())
    if ("error" in fromFile) return yield* Effect.fail(new Options.UsageError(`${nodePath.join(common.home, "config.json")}: ${fromFile.error}`))
    const resolved = SandboxSettings.resolve({ flag: common.sandbox, env: Options.env("SKEIN_SANDBOX"), file: fromFile })
    if ("error" in resolved) return yield* Effect.fail(new Options.UsageError(resolved.error))
    return resolved
  })

export const skeinConfig = (common: Options.Common) =>
  Effect.gen(function*() {
    // A store URL's password is a secret: never shown to the model, in a log or in a message.
    if (common.store !== undefined && Secrets.hasCredentialUrl(common.store)) Secrets.registry().addValue(common.store)
    const limits = {
      home: common.home,
      maxTurnRequests: common.maxTurnRequests,
      permissionTimeoutMs: common.permissionTimeoutMs,
      maxLiveSessions: common.maxLiveSessions,
      mode: common.mode,
      compactAt: compactAtFromEnv(process.env.SKEIN_COMPACT_AT),
      sandbox: yield* sandboxSettings(common),
      // The user's MCP servers (config.json `mcpServers`), for every session.
      mcpServers: McpConfig.load(common.home).servers,
      ...(common.store !== undefined ? { store: { postgres: common.store } } : {})
    }
    if (common.provider === "scripted" || (common.provider === undefined && common.script !== undefined)) {
      if (common.script === undefined) return yield* Effect.fail(new Options.UsageError("The scripted provider needs --script FILE"))
      return { ...limits, script: yield* loadScript(common.script), model: common.model, unconfigured: undefined }
    }
    if (common.script !== undefined) {
      return yield* Effect.fail(new Options.UsageError(`--script selects the scripted provider; it cannot be combined with --provider ${common.provider}`))
    }
    const resolved = yield* Registry.resolve({ home: common.home, env: process.env, provider: common.provider, model: common.model }).pipe(
      Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)),
      Effect.mapError((error) => new Options.UsageError(error.message))
    )
    // Why no model can answer, when none can (the provider then answers every prompt with it).
    const unconfigured = resolved.setup.unconfigured
    return { ...limits, provider: resolved.provider, model: resolved.model, models: resolved.models, unconfigured }
  })
