/**
 * `skein run`: Skein in a terminal.
 *
 * - `skein run PROMPT` (or the prompt piped on stdin): one turn, then exit; `--json` prints
 *   every event as one JSON line.
 * - `skein run` with no prompt at a terminal: prompt after prompt in one session
 *   (`tty/Interactive.ts`).
 * - `--continue` goes on with the newest session of this directory, `--resume ID` with that one;
 *   `-r` (`--resume`) without an id opens a picker of this directory's sessions.
 *
 * The session is presented here when stdin is a terminal: its permission questions are asked
 * at the keyboard. When stdin is piped no one can answer, and calls that need asking are denied.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import { layerLocal } from "../Local.ts"
import * as Framing from "../jsonrpc/Framing.ts"
import type { Runtime as RuntimeService } from "../runtime/Api.ts"
import type { Session } from "../session/Protocol.ts"
import { Runtime } from "../runtime/Api.ts"
import { VERSION } from "../version.ts"
import * as Checks from "./Checks.ts"
import { markWarm } from "./CodeCache.ts"
import { skeinConfig } from "./Config.ts"
import * as Options from "./Options.ts"
import * as Usage from "./Usage.ts"
import { logLayer, resolveId } from "./sessions.ts"
import * as History from "./tty/History.ts"
import * as Input from "./tty/Input.ts"
import * as Interactive from "./tty/Interactive.ts"
import * as Markdown from "./tty/Markdown.ts"
import * as Mentions from "./tty/Mentions.ts"
import * as Picker from "./tty/Picker.ts"
import * as Present from "./tty/Present.ts"
import * as Render from "./tty/Render.ts"
import * as Spinner from "./tty/Spinner.ts"
import * as Terminal from "./tty/Terminal.ts"

export const signalExitCode = 130

const readStdin = () => (process.stdin.isTTY === true ? "" : fs.readFileSync(0, "utf8"))

type Which =
  | { readonly _tag: "new" }
  | { readonly _tag: "continue" }
  | { readonly _tag: "resume"; readonly id: string }

/** `-r` / `--resume` with no id after it (last, or before another option): the picker. */
export const PICK = "\0pick"
const withPicker = (args: ReadonlyArray<string>): Array<string> =>
  args.flatMap((arg, i) => {
    const next = args[i + 1]
    return (arg === "-r" || arg === "--resume") && (next === undefined || next.startsWith("-")) ? [arg, PICK] : [arg]
  })

/** The session to run in: a new one, the newest of this directory, or a saved one. */
const open = (
  runtime: RuntimeService["Service"],
  which: Which,
  options: { readonly cwd: string; readonly cwdGiven: boolean; readonly mode: string | undefined }
) =>
  Effect.gen(function*() {
    if (which._tag === "new") {
      return { session: yield* runtime.newSession({ cwd: options.cwd }), events: undefined }
    }
    let id: string
    if (which._tag === "resume") {
      id = which.id
    } else {
      const page = yield* runtime.listSessions({ cwd: options.cwd, limit: 1 })
      const newest = page.sessions[0]
      if (newest === undefined) return yield* Effect.fail(new Options.UsageError(`No session to continue in ${options.cwd}`))
      id = newest.id
    }
    const loaded = yield* runtime.loadSession({
      sessionId: id,
      ...(options.cwdGiven ? { cwd: options.cwd } : {})
    })
    if (options.mode !== undefined) yield* loaded.session.setMode(options.mode)
    return { session: loaded.session, events: loaded.events }
  })

/** How long a run waits for its MCP servers to connect before its first prompt. */
const MCP_WAIT_MS = 10_000

/**
 * Waits until no MCP server of the session is still connecting (at most `MCP_WAIT_MS`), so the
 * first prompt's model call sees their tools; a server that takes longer goes on connecting.
 */
const mcpConnected = (session: Session) =>
  Effect.gen(function*() {
    const connecting = Effect.map(Effect.orElseSucceed(session.mcpServers, () => []), (servers) => servers.some((s) => s.state === "connecting"))
    if (!(yield* connecting)) return
    Terminal.noteLine("Starting MCP servers…", Terminal.dim)
    for (let waited = 0; waited < MCP_WAIT_MS && (yield* connecting); waited += 50) yield* Effect.sleep(50)
  })

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const parsed = yield* Effect.try({ try: () => Options.parse(withPicker(args), Usage.OPTIONS), catch: (e) => e })
    if (parsed.values.help === true) {
      process.stdout.write(Options.HELP)
      return 0
    }
    Usage.refuse("run", parsed, Options.env)
    const common = Options.common(parsed.values)
    const json = parsed.values.json === true
    const keyboard = process.stdin.isTTY === true
    if (parsed.values.continue === true && parsed.values.resume !== undefined) {
      return yield* Effect.fail(new Options.UsageError("--continue and --resume do not go together"))
    }
    const cwdGiven = typeof parsed.values.cwd === "string"
    const cwd = Checks.directory(cwdGiven ? parsed.values.cwd! : process.cwd(), "--cwd")
    const prompt = parsed.positionals.length > 0 ? parsed.positionals.join(" ") : readStdin().trim()
    const interactive = prompt.length === 0 && keyboard
    if (prompt.length === 0 && !interactive) {
      return yield* Effect.fail(new Options.UsageError("skein run needs a PROMPT (as arguments or on stdin)"))
    }
    if (interactive && json) return yield* Effect.fail(new Options.UsageError("--json needs a PROMPT (as arguments or on stdin)"))
    Checks.home(common.home, { write: true })
    const picking = parsed.values.resume === PICK
    if (picking && !keyboard) return yield* Effect.fail(new Options.UsageError("-r without a session id needs a terminal to choose one; give the id"))
    const which: Which = picking
      ? { _tag: "new" }
      : parsed.values.resume !== undefined
      ? { _tag: "resume", id: yield* resolveId(parsed.values.resume).pipe(Effect.provide(logLayer(common.home, common.store))) }
      : parsed.values.continue === true
      ? { _tag: "continue" }
      : { _tag: "new" }
    let config = yield* skeinConfig(common)
    // A run that cannot reach a model does not start: at a terminal it offers the set-up first.
    if (config.unconfigured !== undefined) {
      const Setup = yield* Effect.promise(() => import("./setup.ts"))
      const left = yield* Setup.offer(common.home, config.unconfigured, keyboard && !json)
      if (left !== undefined) return left
      config = yield* skeinConfig(common)
      if (config.unconfigured !== undefined) return yield* Effect.fail(new Options.UsageError(config.unconfigured))
    }

    Terminal.guardStreams()
    // The answer is rendered as Markdown only for a person: stdout a terminal, not --json.
    const markdown = !json && Terminal.isTty("out") ? yield* Effect.promise(Markdown.load) : undefined
    return yield* Effect.scoped(Effect.gen(function*() {
      const runtime = yield* Runtime
      const input = keyboard ? yield* Input.make({ history: History.open(common.home, cwd), complete: Mentions.complete(cwd) }) : undefined
      let chosen = which
      if (picking) {
        const id = yield* Picker.pick(runtime, input!, cwd)
        if (id === undefined) return 0
        chosen = { _tag: "resume", id }
      }
      // Questions need a person at the keyboard; a piped run denies what would need asking (Present.turn).
      const { session, events } = yield* open(runtime, chosen, { cwd, cwdGiven, mode: common.mode })
      const spinner = yield* Spinner.make(!json)
      const view = json ? undefined : Render.make(spinner, markdown)
      // Stopped from outside (a signal, stdout closed): still say which session it was.
      const said = Effect.onInterrupt(() => Effect.sync(() => Interactive.goodbye(session)))
      if (events !== undefined && !json) Terminal.note(Interactive.summary(session, events))
      yield* mcpConnected(session)
      if (interactive) return yield* said(Interactive.loop(session, { runtime, input: input!, view: view!, version: VERSION }))

      // NDJSON as Skein writes it everywhere: U+2028/U+2029 escaped, so readline keeps lines whole.
      const show = view?.event ?? ((event) => Terminal.write(Framing.encode(event)))
      const child = (id: string) => runtime.getSession(id)
      const presented = yield* said(Present.turn(session, [{ type: "text", text: prompt }], { show, view, input, child }))
      markWarm()
      const { outcome } = presented
      if (!json) {
        const usage = view?.usage()
        // A failed turn has shown its error; "[end_turn]" would say it went well.
        const parts = [
          ...(outcome.error === undefined ? [`[${outcome.stopReason}]`] : []),
          ...(usage !== undefined ? [Render.usageText(usage)] : []),
          `session ${session.id}`
        ]
        Terminal.noteLine(parts.join(" "), Terminal.dim)
      }
      return presented.interrupted ? 130 : outcome.error !== undefined ? 1 : 0
    })).pipe(Effect.provide(layerLocal(config)))
  })
