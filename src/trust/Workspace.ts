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
 * Where a folder stands (`Trust.status`: what it ships, what `trust.json` says) is read once
 * per place where it can change: a session's open (`open`, which every loader of that folder
 * then asks through `loadsProject`, with no read of its own) and a trust answer given in this
 * process (it counts at once for every session in that project). A project's definitions load
 * only once the folder is trusted (or the policy trusts every folder): a folder that shipped
 * nothing at the open gets nothing it ships later (a file the model writes) without an answer.
 *
 * Both are decided per session, never per turn (`forSession`, ADR 0049):
 *
 * - The trust question is settled at the session's first presented prompt: asked there when the
 *   folder ships something and has no answer, and not looked at again in that session (a folder
 *   that shipped nothing then and ships something now is asked about in the next session).
 * - The hooks (`src/hooks`) are read from the settings files once per session in this process,
 *   at its first turn, after the trust question (the project's only when `loadsProject`), and
 *   kept: a settings file changed mid-session (by the model, too) counts from the next session,
 *   or from the session loaded again after it was closed. Trusting the folder in the session's
 *   own question reads them again at once, with the folder's. A child session (a subagent)
 *   runs the tool hooks its parent read. Run live, or answered from a log (`replay`).
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
const questionCard = (status: Trust.Status, id: string): PermissionToolCall => {
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
  /** Where each folder a session opened in stood at the last such open. */
  const standings = new Map<string, Trust.Status>()
  /** The answers given in this process, by project, since a session last opened there. */
  const decided = new Map<string, boolean>()
  /**
   * The answers `trust.json` could not take (a full disk, a read-only home): kept for this
   * process, since no later read of the file holds them, until the file decides the project.
   */
  const unsaved = new Map<string, boolean>()

  /**
   * A session opens in `cwd`: where its folder stands is read now, for all that the session loads
   * from it. What `trust.json` says now replaces an answer given here before (it holds that answer,
   * unless it was changed since).
   */
  const open = (cwd: string): Effect.Effect<Trust.Status> =>
    Effect.tap(status(cwd), (now) =>
      Effect.sync(() => {
        standings.set(cwd, now)
        const kept = unsaved.get(now.project)
        if (kept !== undefined && now.state._tag === "unknown") return void decided.set(now.project, kept)
        unsaved.delete(now.project)
        decided.delete(now.project)
      }))
  /** Where the folder stands as its last open read it (read now when no session opened there). */
  const standing = (cwd: string): Effect.Effect<Trust.Status> => Effect.suspend(() => {
    const known = standings.get(cwd)
    return known === undefined ? open(cwd) : Effect.succeed(known)
  })
  /** Whether a folder that stands so has its own definitions loaded: trusted, by an answer here or in `trust.json`, or by the policy. */
  const grants = (now: Trust.Status): boolean => options.policy !== "ask" || (decided.get(now.project) ?? now.state._tag === "trusted")
  /** Whether the folder's own definitions load now. */
  const loadsProject = (cwd: string): Effect.Effect<boolean> => Effect.map(standing(cwd), grants)

  /**
   * The trust question and the hooks of one session: a session the user prompts runs every
   * hook event; a child session (`child`) only the tool events, and asks nothing. A child runs
   * the hooks its parent read (`inherit`): a settings file written since, in the parent's
   * folder or in the child's worktree, adds none to the parent's session.
   */
  const forSession = (session: {
    readonly id: string
    readonly cwd: string
    readonly sandbox?: SessionSandbox | undefined
    readonly child: boolean
    readonly inherit?: Settings | undefined
  }) => {
    /** Whether the question is settled for this session (asked, or not needed). */
    let settled = false
    /** The session's hooks as read; read again only after the folder was trusted here. */
    let read: ReadonlyArray<HookSettings.Hook> | undefined
    /** What runs them (or answers for them from a log), for the hooks as read. */
    let fire: { readonly from: ReadonlyArray<HookSettings.Hook>; readonly fire: Hooks.Fire } | undefined
    let started = false

    /**
     * Run before each presented turn; asks at most once, at the first: true when the answer made
     * the folder's definitions load. Put to whoever presents the turn (its `Questions`).
     */
    const question: Effect.Effect<boolean, never, Questions> = Effect.gen(function*() {
      if (settled || options.policy !== "ask") return false
      settled = true
      const now = yield* standing(session.cwd)
      if (now.ships.length === 0 || grants(now) || now.state._tag === "denied" || decided.has(now.project)) return false
      const questions = yield* Questions
      const answer = yield* questions.ask({ toolCall: questionCard(now, `trust-${(yield* Clock.currentTimeMillis).toString(36)}`), options: TRUST_OPTIONS })
      if (answer?.outcome !== "selected" || (answer.optionId !== "allow_always" && answer.optionId !== "reject_always")) return false
      const trusted = answer.optionId === "allow_always"
      decided.set(now.project, trusted)
      const saved = yield* Effect.result(Trust.remember(options.home, now.project, trusted, yield* Clock.currentTimeMillis))
      if (saved._tag === "Failure") {
        unsaved.set(now.project, trusted)
        yield* Effect.logWarning(`The trust answer for ${now.project} was not saved (${saved.failure}): it holds until Skein exits`)
      } else unsaved.delete(now.project)
      // The folder's own hooks load from this prompt on.
      if (trusted) read = undefined
      return trusted
    })

    /** The session's hooks: read at its first turn in this process (its parent's, for a child), then kept. */
    const settings: Settings = Effect.suspend(() => {
      if (read !== undefined) return Effect.succeed(read)
      const reading = session.inherit ?? Effect.flatMap(loadsProject(session.cwd), (project) =>
        Effect.map(
          HookSettings.read({ cwd: session.cwd, home: options.home, project, root: Trust.projectOf(session.cwd) }),
          (parsed) => parsed.hooks
        ))
      return Effect.map(reading, (hooks) => (read = hooks))
    })

    const fireNow = Effect.map(settings, (hooks) => {
      if (fire?.from === hooks) return fire.fire
      const made = options.replay?.(session.id) ?? Hooks.live(
        hooks.filter((hook) => !session.child || hook.event === "PreToolUse" || hook.event === "PostToolUse"),
        { cwd: session.cwd, projectDir: Trust.projectOf(session.cwd), sandbox: session.sandbox }
      )
      fire = { from: hooks, fire: made }
      return made
    })

    /** The hooks of one turn; `starting`: the first turn of the session in this process. */
    const hooks = (turn: {
      readonly turn: number
      readonly mode: () => string
      readonly record: (body: CanonicalBody) => Effect.Effect<void, LogError>
    }): Effect.Effect<(Hooks.TurnHooks & { readonly starting?: "startup" | "resume" }) | undefined, never, FileSystem.FileSystem | Path.Path> =>
      Effect.map(fireNow, (fire) => {
        const starting = session.child || started ? undefined : turn.turn === 1 ? "startup" as const : "resume" as const
        started = true
        const turnHooks = Hooks.forTurn({
          fire,
          turn: turn.turn,
          base: { sessionId: session.id, transcriptPath: NodePath.join(options.home, "sessions", `${session.id}.ndjson`), cwd: session.cwd, mode: turn.mode },
          record: turn.record
        })
        return { ...turnHooks, ...(starting !== undefined ? { starting } : {}) }
      })

    return { question, hooks: Object.assign(hooks, { settings }) }
  }

  return { status, open, loadsProject, forSession }
}

export type Workspace = ReturnType<typeof make>

/** A session's hooks as it read them (every event's), for its children to run the same. */
export type Settings = Effect.Effect<ReadonlyArray<HookSettings.Hook>, never, FileSystem.FileSystem | Path.Path>
