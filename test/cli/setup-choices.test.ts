/**
 * The pure parts of `skein setup`: how it reads its answers (`SetupChoices.ts`) and the
 * hidden key input's editing (`tty/Hidden.ts`).
 */
import { describe, expect, it } from "vitest"
import * as Choices from "../../src/cli/SetupChoices.ts"
import * as Hidden from "../../src/cli/tty/Hidden.ts"

describe("skein setup's answers", () => {
  it("a base URL: http(s) only, no credentials, query or fragment; trailing slashes dropped", () => {
    expect(Choices.baseUrl(" http://127.0.0.1:11434/v1/ ")).toEqual({ url: "http://127.0.0.1:11434/v1" })
    expect(Choices.baseUrl("https://openrouter.ai/api/v1")).toEqual({ url: "https://openrouter.ai/api/v1" })
    for (const bad of ["localhost:11434", "ftp://h/v1", "http://user:pw@h/v1", "http://h/v1?key=x", "not a url"]) {
      expect(Choices.baseUrl(bad)).toHaveProperty("problem")
    }
  })

  it("a name for an endpoint: suggested from its host, never a built-in provider's", () => {
    expect(Choices.suggestName("http://127.0.0.1:11434/v1")).toBe("local")
    expect(Choices.suggestName("http://localhost:1234/v1")).toBe("local")
    expect(Choices.suggestName("https://openrouter.ai/api/v1")).toBe("openrouter")
    expect(Choices.suggestName("https://api.groq.com/openai/v1")).toBe("groq")
    expect(Choices.nameProblem("local")).toBeUndefined()
    expect(Choices.nameProblem("openai-chat")).toContain("built-in")
    expect(Choices.nameProblem("scripted")).toContain("built-in")
    expect(Choices.nameProblem("has space")).toBeDefined()
    expect(Choices.nameProblem("")).toBeDefined()
  })

  it("a model: Enter for the default, a number of those shown, an id, part of a name to narrow a long list", () => {
    const ids = ["llama3:8b", "qwen3-coder:30b", "qwen3:4b"]
    expect(Choices.pickModel("", ids, "llama3:8b")).toEqual({ _tag: "chosen", id: "llama3:8b" })
    expect(Choices.pickModel("2", ids, undefined)).toEqual({ _tag: "chosen", id: "qwen3-coder:30b" })
    expect(Choices.pickModel("4", ids, undefined)).toEqual({ _tag: "again", problem: "Choose 1 to 3" })
    expect(Choices.pickModel("qwen3:4b", ids, undefined)).toEqual({ _tag: "chosen", id: "qwen3:4b" })
    expect(Choices.pickModel("QWEN", ids, undefined)).toEqual({ _tag: "narrowed", ids: ["qwen3-coder:30b", "qwen3:4b"] })
    expect(Choices.pickModel("coder", ids, undefined)).toEqual({ _tag: "chosen", id: "qwen3-coder:30b" })
    // One the server serves without listing it (an alias) is taken as typed; the check tells.
    expect(Choices.pickModel("mistral", ids, undefined)).toEqual({ _tag: "chosen", id: "mistral" })
    expect(Choices.pickModel("", undefined, undefined)).toEqual({ _tag: "again", problem: "Type a model id" })
    expect(Choices.pickModel("gpt-5", undefined, "gpt-5")).toEqual({ _tag: "chosen", id: "gpt-5" })
  })

  it("the model offered first: the built-in default when listed, else the list's first", () => {
    const [anthropic, , compatible] = Choices.PROVIDERS
    expect(Choices.defaultModel(anthropic!, ["claude-opus-4-1", "claude-sonnet-4-5"])).toBe("claude-sonnet-4-5")
    expect(Choices.defaultModel(anthropic!, ["claude-opus-4-1"])).toBe("claude-opus-4-1")
    expect(Choices.defaultModel(anthropic!, undefined)).toBe("claude-sonnet-4-5")
    expect(Choices.defaultModel(compatible!, ["a", "b"])).toBe("a")
    expect(Choices.defaultModel(compatible!, undefined)).toBeUndefined()
    expect(Choices.isEnvName("OPENROUTER_API_KEY")).toBe(true)
    expect(Choices.isEnvName("1KEY")).toBe(false)
    expect(Choices.isEnvName("$KEY")).toBe(false)
  })
})

describe("the hidden key input", () => {
  const typed = (...chunks: Array<string>) => chunks.reduce(Hidden.feed, Hidden.initial)

  it("collects what is typed or pasted, ends at Enter, and edits with Backspace and Ctrl-U", () => {
    expect(typed("sk-abc", "123\r").done).toEqual({ _tag: "Line", text: "sk-abc123" })
    expect(typed("sk-abcX\x7f\r").done).toEqual({ _tag: "Line", text: "sk-abc" })
    expect(typed("wrong\x15right\r").done).toEqual({ _tag: "Line", text: "right" })
    expect(typed("é\x7f\b\r").done).toEqual({ _tag: "Line", text: "" })
  })

  it("drops escape sequences (arrows, paste markers, split across reads) and other control keys", () => {
    expect(typed("\x1b[200~sk-key\x1b[201~\r").done).toEqual({ _tag: "Line", text: "sk-key" })
    expect(typed("a\x1b", "[D", "b\x1b]0;title\x07c\t\r").done).toEqual({ _tag: "Line", text: "abc" })
  })

  it("Ctrl-C interrupts; Ctrl-D ends input on an empty line only", () => {
    expect(typed("ab\x03").done).toEqual({ _tag: "Interrupt", empty: false })
    expect(typed("\x04").done).toEqual({ _tag: "End" })
    expect(typed("ab\x04").done).toBeUndefined()
  })
})
