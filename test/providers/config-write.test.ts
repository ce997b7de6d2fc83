/**
 * Changing `config.json` (`providers/ConfigWrite.ts`): what `skein setup` records and what
 * `logout` forgets, keeping everything else; the write itself (atomic, 0600, through a
 * symbolic link, never over a file that is not a JSON object); and the providers of a running
 * agent read again from it (`providers/Reloadable.ts`).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as ConfigWrite from "../../src/providers/ConfigWrite.ts"
import * as Registry from "../../src/providers/Registry.ts"
import * as Reloadable from "../../src/providers/Reloadable.ts"
import * as TempDir from "../support/TempDir.ts"

const KEY = "sk-test-0123456789abcdef"

describe("ConfigWrite", () => {
  it("withChoice makes the provider the default, keeps every other setting, and records its key one way only", () => {
    const before = {
      sandbox: "auto",
      agents: { codex: { acp: { command: "codex-acp" } } },
      provider: "other",
      providers: {
        other: { dialect: "openai-chat", baseUrl: "http://10.0.0.1/v1" },
        local: { dialect: "openai-chat", baseUrl: "http://old/v1", apiKeyEnv: "OLD_KEY", models: [{ id: "m", contextWindow: 8192 }] }
      }
    }
    const after = ConfigWrite.withChoice(before, { provider: "local", dialect: "openai-chat", baseUrl: "http://127.0.0.1:8080/v1", key: { _tag: "stored", value: KEY }, model: "m" })
    assert.deepStrictEqual(after, {
      sandbox: "auto",
      agents: { codex: { acp: { command: "codex-acp" } } },
      provider: "local",
      model: "m",
      providers: {
        other: { dialect: "openai-chat", baseUrl: "http://10.0.0.1/v1" },
        local: { dialect: "openai-chat", baseUrl: "http://127.0.0.1:8080/v1", apiKey: KEY, models: [{ id: "m", contextWindow: 8192 }] }
      }
    })
    // The input is not changed.
    assert.strictEqual(before.provider, "other")
    const named = ConfigWrite.withChoice(after, { provider: "local", key: { _tag: "env", name: "LOCAL_KEY" }, model: "m" })
    assert.deepStrictEqual((named.providers as any).local, { dialect: "openai-chat", baseUrl: "http://127.0.0.1:8080/v1", apiKeyEnv: "LOCAL_KEY", models: [{ id: "m", contextWindow: 8192 }] })
    const none = ConfigWrite.withChoice(named, { provider: "local", key: { _tag: "none" }, model: "m" })
    assert.notProperty((none.providers as any).local, "apiKey")
    assert.notProperty((none.providers as any).local, "apiKeyEnv")
    const builtin = ConfigWrite.withChoice({}, { provider: "anthropic-messages", key: { _tag: "env", name: "ANTHROPIC_API_KEY" }, model: "claude-sonnet-4-5" })
    assert.deepStrictEqual(builtin, { provider: "anthropic-messages", model: "claude-sonnet-4-5", providers: { "anthropic-messages": { apiKeyEnv: "ANTHROPIC_API_KEY" } } })
  })

  it("withoutKeys drops stored keys and credential headers (any case), keeps variable names and everything else", () => {
    const { config, forgot } = ConfigWrite.withoutKeys({
      model: "x",
      providers: {
        a: { apiKey: KEY, models: ["m"] },
        b: { apiKeyEnv: "B_KEY", headers: { Authorization: `Bearer ${KEY}`, "X-API-Key": KEY, "api-key": KEY, "X-Title": "Skein" } },
        c: { baseUrl: "http://c/v1" },
        d: "not an object"
      }
    })
    assert.deepStrictEqual(forgot, ["a", "b"])
    assert.deepStrictEqual(config, {
      model: "x",
      providers: { a: { models: ["m"] }, b: { apiKeyEnv: "B_KEY", headers: { "X-Title": "Skein" } }, c: { baseUrl: "http://c/v1" }, d: "not an object" }
    })
    assert.notInclude(JSON.stringify(config), KEY)
    assert.deepStrictEqual(ConfigWrite.withoutKeys({ sandbox: "off" }), { config: { sandbox: "off" }, forgot: [] })
  })

  it("parseObject: missing or empty is {}, anything but a JSON object is refused with where it is", () => {
    assert.deepStrictEqual(ConfigWrite.parseObject(undefined, "/h/config.json"), {})
    assert.deepStrictEqual(ConfigWrite.parseObject("  \n", "/h/config.json"), {})
    for (const text of ["{ nope", "[1, 2]", "42", "null"]) {
      const parsed = ConfigWrite.parseObject(text, "/h/config.json")
      assert.instanceOf(parsed, ConfigWrite.ConfigWriteError, text)
      assert.include((parsed as ConfigWrite.ConfigWriteError).message, "/h/config.json")
      assert.include((parsed as ConfigWrite.ConfigWriteError).message, "left as it is")
    }
  })

  it.effect("update writes whole and 0600, creates the home 0700, leaves no temporary file, and follows a link", () =>
    Effect.gen(function*() {
      const root = yield* TempDir.make()
      const home = join(root, "new-home")
      const first = yield* ConfigWrite.update(home, (config) => ({ ...config, provider: "local" }))
      assert.strictEqual(first.written, true)
      assert.strictEqual(statSync(home).mode & 0o777, 0o700)
      assert.strictEqual(statSync(first.path).mode & 0o777, 0o600)
      assert.deepStrictEqual(JSON.parse(readFileSync(first.path, "utf8")), { provider: "local" })
      assert.deepStrictEqual(readdirSync(home), ["config.json"])

      // A link (dotfiles kept elsewhere): the file it points to changes, the link stays a link.
      const linked = join(root, "linked")
      mkdirSync(linked)
      const real = join(root, "dotfiles.json")
      writeFileSync(real, JSON.stringify({ sandbox: "off" }), { mode: 0o644 })
      symlinkSync(real, join(linked, "config.json"))
      yield* ConfigWrite.update(linked, (config) => ({ ...config, model: "m" }))
      assert.deepStrictEqual(JSON.parse(readFileSync(real, "utf8")), { sandbox: "off", model: "m" })
      assert.strictEqual(statSync(real).mode & 0o777, 0o600)
      assert.strictEqual(readFileSync(join(linked, "config.json"), "utf8"), readFileSync(real, "utf8"))
    }))

  it.effect("update refuses a file that is not a JSON object and leaves it as it was; forgetKeys leaves a file without keys untouched", () =>
    Effect.gen(function*() {
      const home = yield* TempDir.make()
      const path = join(home, "config.json")
      writeFileSync(path, "{ broken")
      const error = yield* Effect.flip(ConfigWrite.update(home, () => ({ provider: "x" })))
      assert.strictEqual(error.reason, "invalid")
      assert.strictEqual(readFileSync(path, "utf8"), "{ broken")

      writeFileSync(path, JSON.stringify({ providers: { a: { apiKeyEnv: "A_KEY" } } }))
      const before = statSync(path)
      const kept = yield* ConfigWrite.forgetKeys(home)
      assert.strictEqual(kept.written, false)
      assert.strictEqual(statSync(path).mtimeMs, before.mtimeMs)

      const missing = yield* TempDir.make()
      assert.strictEqual((yield* ConfigWrite.forgetKeys(missing)).written, false)
      assert.isFalse(existsSync(join(missing, "config.json")))
    }))

  it.effect("a write that another process made meanwhile is not lost: the change is made again on top of it", () =>
    Effect.gen(function*() {
      const home = yield* TempDir.make()
      const path = join(home, "config.json")
      writeFileSync(path, JSON.stringify({ providers: { a: { apiKey: KEY } } }))
      let calls = 0
      const result = yield* ConfigWrite.update(home, (config) => {
        // The first time, another writer (a logout in the editor's agent) replaces the file
        // after it was read and before it is renamed over.
        if (calls++ === 0) writeFileSync(path, JSON.stringify({ sandbox: "off", providers: { a: { apiKeyEnv: "A_KEY" } } }))
        return { ...config, provider: "local" }
      })
      assert.strictEqual(calls, 2)
      assert.deepStrictEqual(JSON.parse(readFileSync(path, "utf8")), { sandbox: "off", providers: { a: { apiKeyEnv: "A_KEY" } }, provider: "local" })
      assert.deepStrictEqual(result.config, { sandbox: "off", providers: { a: { apiKeyEnv: "A_KEY" } }, provider: "local" })

      // One that never stops changing: an error, and the other writer's file stays.
      let n = 0
      const error = yield* Effect.flip(ConfigWrite.update(home, (config) => {
        writeFileSync(path, JSON.stringify({ n: ++n, pad: "x".repeat(n) }))
        return { ...config, provider: "never" }
      }))
      assert.strictEqual(error.reason, "io")
      assert.include(error.message, "kept changing")
      assert.notInclude(readFileSync(path, "utf8"), "never")
      assert.deepStrictEqual(readdirSync(home), ["config.json"])
    }))
})

describe("Reloadable", () => {
  const request = { sessionId: "s", turn: 1, call: 1, system: "", messages: [], tools: [] }

  it.effect("stands for the configuration last read: its model, catalog and answer change with a reload; an invalid file keeps the last", () =>
    Effect.gen(function*() {
      const home = yield* TempDir.make()
      const options: Registry.Options = { home, env: {} }
      const providers = Reloadable.make(options, yield* Registry.resolve(options))
      assert.include(providers.unconfigured(), "no model provider configured")
      assert.strictEqual(providers.model(), undefined)
      const before = yield* Stream.runCollect(providers.provider.stream(request))
      assert.strictEqual((before[0] as any).text, providers.unconfigured())

      writeFileSync(join(home, "config.json"), JSON.stringify({ provider: "local", model: "coder", providers: { local: { dialect: "openai-chat", baseUrl: "http://127.0.0.1:9/v1" } } }))
      yield* providers.reload
      assert.strictEqual(providers.unconfigured(), undefined)
      assert.strictEqual(providers.model(), "local/coder")
      assert.strictEqual(providers.models.defaultModel, "local/coder")
      assert.deepStrictEqual(providers.models.entries.map((e) => e.key), ["local/coder"])
      assert.strictEqual(providers.provider.name, "local")

      writeFileSync(join(home, "config.json"), "{ broken")
      const error = yield* Effect.flip(providers.reload)
      assert.strictEqual(error.reason, "invalid_config")
      assert.strictEqual(providers.model(), "local/coder")
    }).pipe(Effect.provide(TempDir.platform)))
})
