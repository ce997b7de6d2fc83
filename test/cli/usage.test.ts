/**
 * Every command, in every form, against every option: an option the command would ignore is
 * refused in one line naming it and the command, and one it uses is let through. The expected
 * table below is the audit of what each command reads (src/cli/*.ts), written out on its own.
 */
import { describe, expect, it } from "vitest"
import * as Usage from "../../src/cli/Usage.ts"

const WEB = ["web", "web-approve"]
const RUNTIME = ["home", "provider", "model", "script", "mode", "max-turn-requests", "permission-timeout-ms", "max-live-sessions", "store", "sandbox", "trust"]

interface Form {
  readonly name: string
  readonly command: Usage.Command
  readonly positionals: ReadonlyArray<string>
  /** What the form itself is given (`--rerun`, `--connect URL`). */
  readonly values: Usage.Values
  readonly env?: Readonly<Record<string, string>>
  /** The options it uses besides those of `values` (one that turns it into another form, such as `--rerun`, counts). */
  readonly uses: ReadonlyArray<string>
}

const forms: ReadonlyArray<Form> = [
  { name: "acp", command: "acp", positionals: [], values: {}, uses: [...RUNTIME, "local-fs", "local-terminal", "max-line-bytes", "connect"] },
  {
    name: "acp --connect",
    command: "acp",
    positionals: [],
    values: { connect: "tcp://127.0.0.1:7421" },
    uses: ["token-file", "local-fs", "local-terminal", "max-line-bytes"]
  },
  { name: "run", command: "run", positionals: ["hi"], values: {}, uses: [...RUNTIME, "cwd", "json", "continue", "resume"] },
  { name: "sessions", command: "sessions", positionals: [], values: {}, uses: ["home", "store", "cwd", "limit", "json", "children"] },
  { name: "sessions list", command: "sessions", positionals: ["list"], values: {}, uses: ["home", "store", "cwd", "limit", "json", "children"] },
  { name: "sessions show", command: "sessions", positionals: ["show", "3f2a"], values: {}, uses: ["home", "store"] },
  { name: "sessions rm", command: "sessions", positionals: ["rm", "3f2a"], values: {}, uses: ["home", "store", "yes"] },
  { name: "sessions fork", command: "sessions", positionals: ["fork", "3f2a"], values: {}, uses: ["home", "store", "turn"] },
  { name: "replay", command: "replay", positionals: ["3f2a"], values: {}, uses: ["home", "store", "acp", "rerun"] },
  { name: "replay --acp", command: "replay", positionals: ["3f2a"], values: { acp: true }, uses: ["home", "store", "provider", "model", "script"] },
  { name: "replay --rerun", command: "replay", positionals: ["3f2a"], values: { rerun: true }, uses: ["home", "store", "cwd", "json", "rerun-home", "sandbox"] },
  { name: "doctor", command: "doctor", positionals: [], values: {}, uses: [...RUNTIME, "cluster", "mcp"] },
  { name: "doctor --store", command: "doctor", positionals: [], values: { store: "postgres://db/skein" }, uses: [...RUNTIME.filter((o) => o !== "store"), "cluster"] },
  { name: "serve", command: "serve", positionals: [], values: {}, uses: [...RUNTIME, "listen", "cluster", ...WEB] },
  { name: "serve --listen unix:", command: "serve", positionals: [], values: { listen: "unix:/tmp/s.sock" }, uses: [...RUNTIME, "cluster", ...WEB] },
  {
    name: "serve --listen tcp://",
    command: "serve",
    positionals: [],
    values: { listen: "tcp://127.0.0.1:7421" },
    uses: [...RUNTIME, "token-file", "max-connections", "cluster", ...WEB]
  },
  {
    name: "serve --cluster",
    command: "serve",
    positionals: [],
    values: { cluster: "postgres://db/skein" },
    uses: [...RUNTIME.filter((o) => o !== "store"), "listen", "token-file", "runner", "runner-listen", "lock-expiry", "drain", "max-connections", ...WEB]
  },
  {
    name: "serve with SKEIN_CLUSTER",
    command: "serve",
    positionals: [],
    values: {},
    env: { SKEIN_CLUSTER: "postgres://db/skein" },
    uses: [...RUNTIME.filter((o) => o !== "store"), "listen", "token-file", "cluster", "runner", "runner-listen", "lock-expiry", "drain", "max-connections", ...WEB]
  },
  { name: "monitor", command: "monitor", positionals: [], values: {}, uses: ["home", "store", "connect", ...WEB] },
  { name: "monitor --connect", command: "monitor", positionals: [], values: { connect: "tcp://127.0.0.1:7421" }, uses: ["token-file", ...WEB] }
]

const sample = (option: Usage.Option) => (Usage.OPTIONS[option].type === "boolean" ? true : "x")

describe("skein: options a command does not use", () => {
  for (const form of forms) {
    it(`${form.name}: uses exactly its options, refuses each other one in a line naming it`, () => {
      const env = (name: string) => form.env?.[name]
      const accepted: Array<string> = []
      for (const option of Object.keys(Usage.OPTIONS) as Array<Usage.Option>) {
        if (option === "help" || form.values[option] !== undefined) continue
        const values = { ...form.values, [option]: sample(option) }
        const refusal = Usage.unused(Usage.uses(form.command, values, form.positionals, env), values)
        if (refusal === undefined) {
          accepted.push(option)
          continue
        }
        // The option named, or one of the form's own that no longer goes with it (`--acp` once `--rerun` is added).
        const named = [option, ...Object.keys(form.values)].join("|")
        expect(refusal).toMatch(new RegExp(`^skein ${form.command}\\b[^\\n]* does not use --(${named})(: [^\\n]+)?$`))
      }
      expect(accepted.sort()).toEqual([...form.uses].sort())
    })
  }

  it("says why where it can: the example of a re-run given a script, and of an acp option elsewhere", () => {
    const rerun = { rerun: true, script: "s.json" }
    expect(Usage.unused(Usage.uses("replay", rerun, ["3f2a"], () => undefined), rerun)).toBe(
      "skein replay --rerun does not use --script: a re-run answers every model call from the log and replays its modes and permission answers"
    )
    const run = { "local-fs": true }
    expect(Usage.unused(Usage.uses("run", run, ["hi"], () => undefined), run)).toBe(
      "skein run does not use --local-fs: skein run has no client: files and commands are always local"
    )
    const monitor = { model: "m" }
    expect(Usage.unused(Usage.uses("monitor", monitor, [], () => undefined), monitor)).toBe(
      "skein monitor does not use --model: the monitor watches sessions and runs none"
    )
    const run2 = { web: "127.0.0.1:0" }
    expect(Usage.unused(Usage.uses("run", run2, ["hi"], () => undefined), run2)).toBe("skein run does not use --web: it is an option of skein serve and skein monitor")
    const sessions = { "max-line-bytes": "9" }
    expect(Usage.unused(Usage.uses("sessions", sessions, [], () => undefined), sessions)).toBe(
      "skein sessions list does not use --max-line-bytes: it is an option of skein acp"
    )
  })

  it("--help goes with anything", () => {
    for (const form of forms) {
      const values = { ...form.values, help: true }
      expect(Usage.unused(Usage.uses(form.command, values, form.positionals, () => undefined), values)).toBeUndefined()
    }
  })
})
