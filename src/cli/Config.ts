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
import type { SkeinConfig } from "../Local.ts"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as SandboxSettings from "../sandbox/Settings.ts"
import * as McpConfig from "../mcp/Config.ts"
import * as Reloadable from "../providers/Reloadable.ts"
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

/** What sessions are limited by, where they live and how their commands are sandboxed, from the options. */
const limitsOf = (common: Options.Common) =>
  Effect.gen(function*() {
    // A store URL's password is a secret: never shown to the model, in a log or in a message.
    if (common.store !== undefined && Secrets.hasCredentialUrl(common.store)) Secrets.registry().addValue(common.store)
    return {
      home: common.home,
      maxTurnRequests: common.maxTurnRequests,
      permissionTimeoutMs: common.permissionTimeoutMs,
      maxLiveSessions: common.maxLiveSessions,
      mode: common.mode,
      compactAt: compactAtFromEnv(process.env.SKEIN_COMPACT_AT),
      // The user's MCP servers (config.json `mcpServers`), for every session.
      mcpServers: McpConfig.load(common.home).servers,
      sandbox: yield* sandboxSettings(common),
      ...(common.store !== undefined ? { store: { postgres: common.store } } : {})
    }
  })

/**
 * Whether the scripted provider answers (`--script FILE`, or `--provider scripted`), and the
 * combinations no command accepts: `skein run`, `skein acp` and `skein doctor` all decide it here.
 */
export const scripted = (common: Options.Common): Effect.Effect<boolean, Options.UsageError> => {
  if (common.provider === "scripted" || (common.provider === undefined && common.script !== undefined)) {
    return common.script === undefined ? Effect.fail(new Options.UsageError("The scripted provider needs --script FILE")) : Effect.succeed(true)
  }
  if (common.script !== undefined) {
    return Effect.fail(new Options.UsageError(`--script selects the scripted provider; it cannot be combined with --provider ${common.provider}`))
  }
  return Effect.succeed(false)
}

/** The script, when the options select the scripted provider; a usage error when they contradict each other. */
const scriptOf = (common: Options.Common) =>
  Effect.gen(function*() {
    if (yield* scripted(common)) {
      return yield* loadScript(common.script!)
    }
    return undefined
  })

const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)

/** How the providers are resolved for these options (`Registry.resolve`). */
const registryOptions = (common: Options.Common): Registry.Options => ({
  home: common.home,
  env: process.env,
  provider: common.provider,
  model: common.model
})

const resolveProviders = (common: Options.Common) =>
  Registry.resolve(registryOptions(common)).pipe(
    Effect.provide(platform),
    Effect.mapError((error) => new Options.UsageError(error.message))
  )

export const skeinConfig = (common: Options.Common) =>
  Effect.gen(function*() {
    const limits = yield* limitsOf(common)
    const script = yield* scriptOf(common)
    if (script !== undefined) return { ...limits, script, model: common.model, unconfigured: undefined }
    const resolved = yield* resolveProviders(common)
    // Why no model can answer, when none can (the provider then answers every prompt with it).
    const unconfigured = resolved.setup.unconfigured
    return { ...limits, provider: resolved.provider, model: resolved.model, models: resolved.models, unconfigured }
  })

/**
 * `skein acp`: the configuration, with providers that sign-in reads again while it runs
 * (`providers/Reloadable.ts`): new sessions start with what was read last. `reloadable` is undefined
 * with the scripted provider, which has nothing to sign in to.
 */
export const reloadableConfig = (common: Options.Common) =>
  Effect.gen(function*() {
    const limits = yield* limitsOf(common)
    const script = yield* scriptOf(common)
    if (script !== undefined) {
      const config: SkeinConfig = { ...limits, script, model: common.model }
      return { config, reloadable: undefined }
    }
    const reloadable = Reloadable.make(registryOptions(common), yield* resolveProviders(common))
    const config: SkeinConfig = {
      ...limits,
      provider: reloadable.provider,
      models: reloadable.models,
      get model() {
        return reloadable.model()
      }
    }
    return { config, reloadable }
  })

/** Reads the configuration again into `reloadable` (the platform provided). */
export const reload = (reloadable: Reloadable.Reloadable) => Effect.provide(reloadable.reload, platform)
