/**
 * `skein setup`: chooses the model provider Skein uses, at a terminal, and saves it in
 * `$SKEIN_HOME/config.json`. It is the `terminal` auth method `skein acp` offers editors
 * (`server/Auth.ts`), and what `skein run` offers when nothing is configured.
 *
 * The questions: the provider (Anthropic, OpenAI, or any OpenAI-compatible server with its
 * base URL and a name); the API key, typed without echo (saved in the file), or the name of
 * the environment variable that holds it (only the name is saved), or none for a server that
 * needs none; the model, from the provider's list when it gives one, else typed. Then one tiny
 * request (`providers/Probe.ts`) through the very settings that will be saved, read back as
 * Skein reads them (`Registry.setup`); when it fails, the reason, and a choice: try again,
 * change the key or the model, save anyway, or quit without saving.
 *
 * The file is changed, not replaced (`providers/ConfigWrite.ts`): the chosen provider becomes
 * the default, every other setting stays; it is written atomically with mode 0600. A file
 * that is not valid is refused before any question. Exit codes: 0 saved, 1 quit (or input
 * ended) without saving, 2 usage (not a terminal, a bad option, an invalid config file),
 * 130 Ctrl-C.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { HttpClient } from "effect/http/HttpClient"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import * as ConfigWrite from "../providers/ConfigWrite.ts"
import * as Dialects from "../providers/Dialects.ts"
import * as Errors from "../providers/Errors.ts"
import * as Probe from "../providers/Probe.ts"
import * as ProviderConfig from "../providers/ProviderConfig.ts"
import * as Registry from "../providers/Registry.ts"
import * as Checks from "./Checks.ts"
import * as Options from "./Options.ts"
import * as Choices from "./SetupChoices.ts"
import * as Hidden from "./tty/Hidden.ts"
import * as History from "./tty/History.ts"
import * as Input from "./tty/Input.ts"
import * as Terminal from "./tty/Terminal.ts"

export const signalExitCode = 130

export const HELP = `skein setup — choose the model provider Skein uses (at a terminal)

Usage: skein setup [--home DIR]

Asks for the provider (Anthropic, OpenAI, or an OpenAI-compatible server such as Ollama,
LM Studio, llama.cpp, vLLM or OpenRouter), its API key (typed without echo and saved, or the
name of the environment variable holding it), and the model (from the provider's list when
it gives one). Checks them with one tiny request, then saves them in $SKEIN_HOME/config.json
(mode 0600), keeping every other setting there. Editors show it as Skein's sign-in.
`

/** The user left: Ctrl-C (130), the end of input or "quit" (1). Nothing is saved. */
class Quit extends Data.TaggedError("Quit")<{ readonly code: number }> {}

const say = (text: string) => Effect.sync(() => Terminal.noteLine(text))
const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)

/** The questions, given a terminal. Writes `config.json` and returns its path, or fails with `Quit`. */
export const wizard = (home: string) =>
  Effect.scoped(Effect.gen(function*() {
    const path = nodePath.join(home, "config.json")
    const input = yield* Input.make({ history: History.memory() })
    const answer = (line: Input.Line) =>
      line._tag === "Line" ? Effect.succeed(line.text) : Effect.fail(new Quit({ code: line._tag === "Interrupt" ? 130 : 1 }))
    // Shift-Tab (which cycles modes in \`skein run\`) means nothing here: the question is asked again.
    const ask = (prompt: string): Effect.Effect<string, Quit> =>
      Effect.flatMap(input.line({ prompt, hint: "", allowEmpty: true }), (line) => (line._tag === "Cycle" ? ask(prompt) : answer(line)))
    const askHidden = (prompt: string) => Effect.flatMap(Hidden.line(prompt), answer)
    /** One of `options` by its number (Enter: `fallback`). */
    const choose = (question: string, options: ReadonlyArray<string>, fallback: number) =>
      Effect.gen(function*() {
        yield* say(question)
        for (const [i, option] of options.entries()) yield* say(`  ${i + 1}) ${option}`)
        while (true) {
          const text = (yield* ask(`Choose 1-${options.length} [${fallback}]: `)).trim()
          const n = text === "" ? fallback : Number(text)
          if (Number.isInteger(n) && n >= 1 && n <= options.length) return n
          yield* say(`Type a number from 1 to ${options.length}.`)
        }
      })
    /** Asks until `read` takes the answer (Enter: `fallback`). */
    const askUntil = <A>(prompt: string, fallback: string | undefined, read: (text: string) => A | string) =>
      Effect.gen(function*() {
        while (true) {
          const text = (yield* ask(fallback === undefined ? `${prompt}: ` : `${prompt} [${fallback}]: `)).trim()
          const result = read(text === "" && fallback !== undefined ? fallback : text)
          if (typeof result !== "string") return result
          yield* say(result)
        }
      })

    const existing = readExisting(path)
    yield* say(Terminal.bold("err", "Skein set-up") + ` — the model provider Skein uses, saved in ${path}`)
    if (typeof existing.provider === "string") yield* say(`Now: provider ${existing.provider}${typeof existing.model === "string" ? `, model ${existing.model}` : ""}.`)

    const kind = Choices.PROVIDERS[(yield* choose("Which provider?", Choices.PROVIDERS.map((p) => p.label), 1)) - 1]!
    let endpoint: { readonly name: string; readonly baseUrl: string | undefined } = { name: kind.builtin ?? "", baseUrl: undefined }
    if (kind.builtin === undefined) {
      const { url } = yield* askUntil("Base URL", Choices.LOCAL_URL, (text) => {
        const read = Choices.baseUrl(text)
        return "url" in read ? read : read.problem
      })
      const name = yield* askUntil("A name for it in config.json", Choices.suggestName(url), (text) => {
        const problem = Choices.nameProblem(text)
        return problem === undefined ? { name: text } : problem
      })
      endpoint = { name: name.name, baseUrl: url }
    }

    const askKey = Effect.gen(function*() {
      const local = endpoint.baseUrl !== undefined && Choices.suggestName(endpoint.baseUrl) === "local"
      const options = [
        "Type it now (not shown as you type; saved in config.json, readable only by you)",
        "Read it from an environment variable (only its name is saved)",
        ...(kind.builtin === undefined ? ["None: the server needs no key"] : [])
      ]
      const fallback = local ? 3 : kind.builtin !== undefined && (process.env[kind.keyEnv] ?? "") !== "" ? 2 : 1
      const how = yield* choose("The API key?", options, fallback)
      if (how === 3) return { _tag: "none" } as const
      if (how === 1) {
        while (true) {
          const value = (yield* askHidden("API key: ")).trim()
          if (value !== "" && !/\s/.test(value)) return { _tag: "stored", value } as const
          yield* say(value === "" ? "Nothing was typed; type or paste the key, then Enter." : "A key has no spaces in it.")
        }
      }
      const name = yield* askUntil("Variable name", kind.keyEnv, (text) => (Choices.isEnvName(text) ? { name: text } : "Letters, digits and _ only, not starting with a digit"))
      if ((process.env[name.name] ?? "") === "") {
        yield* say(`${name.name} is not set here. Skein reads it from the environment it runs in (an editor's own, for skein acp).`)
      }
      return { _tag: "env", name: name.name } as const
    })

    const http = yield* Dialects.fetchClient
    let key = yield* askKey
    let model: string | undefined
    const choiceOf = (m: string): ConfigWrite.Choice => ({
      provider: endpoint.name,
      dialect: kind.builtin === undefined ? "openai-chat" : undefined,
      baseUrl: endpoint.baseUrl,
      key,
      model: m
    })
    while (true) {
      // The provider as Skein will read it, from the file as it will be written.
      const provider = yield* providerAsRead(home, path, ConfigWrite.withChoice(readExisting(path), choiceOf(model ?? "")), endpoint.name)
      if (model === undefined) model = yield* askModel(provider.target, kind, http, askUntil)
      yield* say(`Checking ${endpoint.name} with ${model} (one short request)…`)
      const checked = provider.problem !== undefined
        ? { _tag: "Failure" as const, failure: provider.problem }
        : yield* Effect.result(Probe.check(provider.target, model, http))
      if (checked._tag === "Success") {
        yield* say(Terminal.green("err", "✓ It answered."))
        break
      }
      yield* say(Terminal.red("err", `✗ ${Terminal.oneLine(checked.failure)}`))
      const next = yield* askUntil("[r] try again, [k] change the key, [m] change the model, [s] save anyway, [q] quit without saving", "r", (text) =>
        ["r", "k", "m", "s", "q"].includes(text.toLowerCase()) ? { key: text.toLowerCase() } : "Type r, k, m, s or q")
      if (next.key === "q") return yield* new Quit({ code: 1 })
      if (next.key === "s") break
      if (next.key === "k") key = yield* askKey
      if (next.key === "m") model = undefined
    }
    const saved = yield* ConfigWrite.update(home, (config) => ConfigWrite.withChoice(config, choiceOf(model)))
    yield* say(`Saved ${saved.path} (readable only by you): provider ${endpoint.name}, model ${model}.`)
    yield* say("Skein uses it from now on: in `skein run`, and in editors for their next session.")
    return saved.path
  }))

/** The model: from the provider's list when it gives one (by number, id, or part of a name), else typed. */
const askModel = (
  target: Registry.ProviderSetup["target"],
  kind: Choices.ProviderKind,
  http: HttpClient,
  askUntil: <A>(prompt: string, fallback: string | undefined, read: (text: string) => A | string) => Effect.Effect<A, Quit>
) =>
  Effect.gen(function*() {
    yield* say(`Listing the models at ${Errors.safeUrl(target.baseUrl)}…`)
    const listed = yield* Effect.result(Probe.listModels(target, http))
    const ids = listed._tag === "Success" && listed.success.length > 0 ? listed.success : undefined
    if (listed._tag === "Failure") yield* say(`Could not list them (${Terminal.oneLine(listed.failure)}); type the model's id.`)
    else if (ids === undefined) yield* say("The list is empty; type the model's id.")
    const fallback = Choices.defaultModel(kind, ids)
    let shown = ids
    while (true) {
      if (shown !== undefined) {
        for (const [i, id] of shown.slice(0, Choices.LIST_AT_ONCE).entries()) yield* say(`  ${String(i + 1).padStart(2)}) ${Terminal.oneLine(id)}`)
        if (shown.length > Choices.LIST_AT_ONCE) yield* say(`  … and ${shown.length - Choices.LIST_AT_ONCE} more: type part of a name to narrow the list`)
      }
      const visible = shown?.slice(0, Choices.LIST_AT_ONCE)
      const picked = yield* askUntil(shown === undefined ? "Model id" : "Model (a number, an id, or part of a name)", fallback, (text) => {
        const pick = Choices.pickModel(text, text.trim() !== "" && /^\d+$/.test(text.trim()) ? visible : shown, fallback)
        return pick._tag === "again" ? pick.problem : pick
      })
      if (picked._tag === "chosen") return picked.id
      shown = picked.ids
    }
  })

/** The text of `config.json` (undefined when there is none); a usage error when it cannot be read. */
const readText = (path: string): string | undefined => {
  try {
    return fs.readFileSync(path, "utf8")
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === "ENOENT") return undefined
    throw new Options.UsageError(`Cannot read ${path}${typeof code === "string" ? ` (${code})` : ""}; fix it, then run skein setup again`)
  }
}

/** `config.json` as an object (`{}` when missing); a usage error when it cannot be changed safely. */
const readExisting = (path: string): ConfigWrite.Json => {
  const parsed = ConfigWrite.parseObject(readText(path), path)
  if (parsed instanceof ConfigWrite.ConfigWriteError) throw new Options.UsageError(parsed.message)
  return parsed
}

/** The provider `name` as Skein reads it from `config` (the key resolved, the environment applied). */
const providerAsRead = (home: string, path: string, config: ConfigWrite.Json, name: string) =>
  Effect.gen(function*() {
    const loaded = { path, ...ProviderConfig.parse(JSON.stringify(config), path) }
    if (loaded.status._tag === "invalid") return yield* Effect.die(new Options.UsageError(loaded.status.message))
    const s = yield* Registry.setup({ home, env: process.env, loadedConfig: loaded }).pipe(Effect.provide(platform))
    const provider = s.providers.find((p) => p.target.name === name)
    if (provider === undefined) return yield* Effect.die(new Options.UsageError(s.errors.join("; ")))
    return provider
  })

/**
 * `skein run` without a usable provider. At a terminal: asks whether to set one up now, and
 * does (undefined: go on, the configuration is saved; a number: the exit code, when the user
 * declined or left). Elsewhere: a usage error that says why, and to run `skein setup`.
 */
export const offer = (home: string, unconfigured: string, atTerminal: boolean): Effect.Effect<number | undefined, Options.UsageError | ConfigWrite.ConfigWriteError> =>
  Effect.gen(function*() {
    const advice = `${unconfigured.split("\n")[0]} Run \`skein setup\` in a terminal to choose a provider.`
    if (!atTerminal) return yield* Effect.fail(new Options.UsageError(advice))
    yield* say(unconfigured.split("\n")[0]!)
    const yes = yield* Effect.scoped(Effect.gen(function*() {
      const input = yield* Input.make({ history: History.memory() })
      while (true) {
        const line = yield* input.line({ prompt: "Set up a provider now? [Y/n] ", hint: "", allowEmpty: true })
        if (line._tag !== "Line") return false
        const text = line.text.trim().toLowerCase()
        if (text === "" || text === "y" || text === "yes") return true
        if (text === "n" || text === "no") return false
      }
    }))
    if (!yes) return yield* Effect.fail(new Options.UsageError(advice))
    return yield* wizard(home).pipe(
      Effect.as(undefined),
      Effect.catchTag("Quit", (quit) => Effect.as(say("Set-up cancelled: nothing was saved."), quit.code))
    )
  })

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const parsed = yield* Effect.try({ try: () => Options.parse(args, { home: { type: "string" }, help: { type: "boolean", short: "h" } }), catch: (e) => e })
    if (parsed.values.help === true) {
      process.stdout.write(HELP)
      return 0
    }
    if (parsed.positionals.length > 0) return yield* Effect.fail(new Options.UsageError("skein setup takes no arguments"))
    const common = Options.common(parsed.values)
    if (process.stdin.isTTY !== true) {
      return yield* Effect.fail(new Options.UsageError(`skein setup asks questions: run it in a terminal (or write ${nodePath.join(common.home, "config.json")} yourself; see the README)`))
    }
    Checks.home(common.home, { write: false })
    const path = nodePath.join(common.home, "config.json")
    // A file Skein cannot read back is not changed: say so before asking anything.
    const status = ProviderConfig.parse(readText(path) || "{}", path).status
    if (status._tag === "invalid") return yield* Effect.fail(new Options.UsageError(`${status.message}; fix or move it, then run skein setup again`))
    return yield* wizard(common.home).pipe(
      Effect.as(0),
      Effect.catchTag("Quit", (quit) => Effect.as(say("Set-up cancelled: nothing was saved."), quit.code))
    )
  })
