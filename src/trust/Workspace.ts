/**
 * What a runtime may load from a session's folder, and the question that decides it: the one
 * check every loader asks (`loadsProject`: hooks, agents, commands, skills, settings, MCP servers), and the
 * trust question at the first presented prompt of a session in a folder that ships any of them
 * and has no answer yet (a permission question on a pseudo tool call "Trust this folder?",
 * which the ACP client and the terminal both show; ACP RFD #1488 proposes a dedicated
 * method, not yet in the protocol). Asked at most once per session; "Trust" and "Don't trust"
 * are remembered in Skein's home; no answer (cancelled, nobody there, a timeout) is not, and
 * the folder's definitions stay unloaded for that session.
 *
 * Also the hooks of a session's turns (`src/hooks`): read from the settings files at each turn's
 * start (the project's only when `loadsProject`), run live, or answered from a log (`replay`).
 */
import * as NodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Path from "effect/Path"
import type { CanonicalBody } from "../log/Event.ts"
import type { LogError } from "../log/LogError.ts"
import * as Hooks from "../hooks/Hooks.ts"
import * as HookSettings from "../hooks/Settings.ts"
import type { SessionSandbox } from "../tools/Sandboxed.ts"
import { Questions } from "../session/TurnContract.ts"
import type { PermissionOption, PermissionToolCall } from "../Vocabulary.ts"
import * as Trust from "./Trust.ts"

const TRUST_OPTIONS: ReadonlyArray<PermissionOption> = [
  { optionId: "allow_always", name: "Trust this folder", kind: "allow_always" },
  { optionId: "reject_always", name: "Don't trust", kind: "reject_always" }
]

/** The question's pseudo tool call: the folder and what it ships (as locations), and what trusting it means. */
const question = (status: Trust.Status, id: string): PermissionToolCall => {
  const listed = status.ships.map((file) => NodePath.relative(status.project, file) || file)
  return {
    toolCallId: id,
    title: `Trust this folder? ${status.project} ships ${listed.join(", ")}: trusting it loads them (its hooks run commands, its MCP servers start). ` +
      "Until then only your own definitions load; AGENTS.md and CLAUDE.md are read either way.",
    kind: "other",
    status: "pending",
    rawInput: { folder: status.project, ships: listed },
    locations: status.ships.map((file) => ({ path: file }))
  }
}

export interface Options {
  readonly home: string
  readonly userHome?: string | undefined
  /** `undefined`: every folder's definitions load (an embedding program decides for itself). */
  readonly policy: Trust.Policy | undefined
  /** Answers hooks from a log instead of running them (`skein replay --rerun`), by session. */
  readonly replay?: ((sessionId: string) => Hooks.Fire) | undefined
}

export const make = (options: Options) => {
  const status = (cwd: string) => Trust.status({ cwd, home: options.home, userHome: options.userHome, policy: options.policy })
  /** Whether the folder's own definitions load now. */
  const loadsProject = (cwd: string): Effect.Effect<boolean> => Effect.map(status(cwd), (s) => s.loads)

  /**
   * The trust question of one session (asked once at most), put to whoever presents the turn
   * (its `Questions`): run before each presented turn; true when the answer made the folder's
   * definitions load.
   */
  const questionFor = (cwd: string) => {
    let asked = false
    return Effect.gen(function*() {
      if (asked || options.policy !== "ask") return false
      const now = yield* status(cwd)
      if (now.loads || now.state._tag === "denied") return false
      asked = true
      const questions = yield* Questions
      const answer = yield* questions.ask({ toolCall: question(now, `trust-${(yield* Clock.currentTimeMillis).toString(36)}`), options: TRUST_OPTIONS })
      if (answer?.outcome !== "selected" || (answer.optionId !== "allow_always" && answer.optionId !== "reject_always")) return false
      const trusted = answer.optionId === "allow_always"
      const saved = yield* Effect.result(Trust.remember(options.home, now.project, trusted, yield* Clock.currentTimeMillis))
      if (saved._tag === "Failure") yield* Effect.logWarning(`The trust answer for ${now.project} was not remembered: ${saved.failure}`)
      return trusted
    })
  }

  /**
   * The hooks of a session's turn: `top` (a session the user prompts) runs every event; a child
   * session only the tool events. `starting`: the first turn of the session in this process.
   */
  const hooksFor = (session: {
    readonly id: string
    readonly cwd: string
    readonly sandbox?: SessionSandbox | undefined
    readonly child: boolean
  }) => {
    let started = false
    return (turn: {
      readonly turn: number
      readonly mode: () => string
      readonly record: (body: CanonicalBody) => Effect.Effect<void, LogError>
    }): Effect.Effect<(Hooks.TurnHooks & { readonly starting?: "startup" | "resume" }) | undefined, never, FileSystem.FileSystem | Path.Path> =>
      Effect.gen(function*() {
        const replayed = options.replay?.(session.id)
        const root = Trust.projectOf(session.cwd)
        const fire = replayed ?? Hooks.live(
          (yield* HookSettings.read({ cwd: session.cwd, home: options.home, project: yield* loadsProject(session.cwd), root })).hooks
            .filter((hook) => !session.child || hook.event === "PreToolUse" || hook.event === "PostToolUse"),
          { cwd: session.cwd, projectDir: root, sandbox: session.sandbox }
        )
        const starting = session.child || started ? undefined : turn.turn === 1 ? "startup" as const : "resume" as const
        started = true
        const hooks = Hooks.forTurn({
          fire,
          turn: turn.turn,
          base: { sessionId: session.id, transcriptPath: NodePath.join(options.home, "sessions", `${session.id}.ndjson`), cwd: session.cwd, mode: turn.mode },
          record: turn.record
        })
        return { ...hooks, ...(starting !== undefined ? { starting } : {}) }
      })
  }

  return { status, loadsProject, questionFor, hooksFor }
}

export type Workspace = ReturnType<typeof make>
