/**
 * What a session runs besides the model/tool loop: a prompt's slash command resolved to what
 * the model sees (or to a local command: `/compact`, `/undo`, `/rewind`), the skills a turn
 * may load, and the local commands that change files (`/undo`, `/rewind`).
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Checkpoints from "../checkpoints/Checkpoints.ts"
import * as Commands from "../commands/Commands.ts"
import type { Canonical, CanonicalBody, CommandRun } from "../log/Event.ts"
import type { LogError } from "../log/LogError.ts"
import type { SessionError, TurnOutcome } from "../session/Protocol.ts"
import type * as TurnContract from "../session/TurnContract.ts"
import * as Skills from "../skills/Skills.ts"
import * as Undo from "../session/Undo.ts"
import * as Ceiling from "../tools/Ceiling.ts"
import type * as Edges from "../tools/Edges.ts"
import * as Tool from "../tools/Tool.ts"
import type { ToolEnv } from "../tools/Tool.ts"
import type { UserBlock } from "../Vocabulary.ts"

/** What a session can run besides its tools: skills, and slash commands. */
export interface Extensions {
  readonly skills: ReadonlyArray<Skills.Skill>
  readonly commands: ReadonlyArray<Commands.Command>
}

export const noExtensions: Extensions = { skills: [], commands: [] }

/** What a prompt comes to once the `/name` of a known command in it is resolved (`Commands.locate`). */
export interface Resolved {
  /** What the model sees (and `turn_start` logs). */
  readonly content: ReadonlyArray<UserBlock>
  readonly command?: CommandRun | undefined
  /** The skill the command loaded, to log as activated. */
  readonly activation?: { readonly name: string; readonly path: string; readonly sha256: string; readonly body: string } | undefined
  /** What the user is told about the command: why it could not run as such (it went to the model as typed), or what of the prompt it left aside. */
  readonly notice?: string | undefined
}

/** What the session's commands use of it. */
export interface Env {
  readonly cwd: string
  readonly additionalDirectories: ReadonlyArray<string>
  readonly services: Context.Context<ToolEnv>
  /** Logs an event of turn `turn`. */
  readonly record: (turn: number, body: CanonicalBody) => Effect.Effect<void, LogError>
  readonly readLog: Effect.Effect<ReadonlyArray<Canonical>, SessionError>
  readonly checkpoints: Checkpoints.Checkpoints | undefined
  /** The most the session may do now. */
  readonly reach: () => Ceiling.Ceiling
}

/** A command the model never sees ran: the rest of its prompt went nowhere, and the user is told. */
const leftAside = (name: string, content: ReadonlyArray<UserBlock>) =>
  content.length > 1
    ? `/${name} ran on its own: the rest of this prompt (${content.length - 1} more block${content.length > 2 ? "s" : ""}) was not sent to the model. Send it again if you meant it.`
    : undefined

/**
 * A prompt with a text block that starts with `/name` of a known command (the last one)
 * becomes what that command runs; its other blocks stay where they are.
 */
export const resolve = (env: Env, content: ReadonlyArray<UserBlock>, extensions: Extensions): Effect.Effect<Resolved> =>
  Effect.gen(function*() {
    const located = Commands.locate(content, extensions.commands)
    if (located === undefined) return { content }
    const found = located.command
    const command: CommandRun = { name: found.name, arguments: located.arguments, ...(located.block > 0 ? { block: located.block } : {}) }
    const withText = (text: string): ReadonlyArray<UserBlock> => content.map((block, i) => (i === located.block ? { type: "text", text } : block))
    switch (found.kind) {
      case "builtin":
        if (found.name === "compact" || found.name === "undo" || found.name === "rewind") return { content, command: { ...command, local: true }, notice: leftAside(found.name, content) }
        return { content: withText(Commands.expand(found.name === "init" ? Commands.INIT_PROMPT : Commands.REVIEW_PROMPT, located.arguments)), command }
      case "prompt":
        return { content: withText(Commands.expand(found.template ?? "", located.arguments)), command }
      case "skill": {
        if (found.skill === undefined) return { content }
        const skill = found.skill
        const loaded = yield* Effect.result(Skills.activate(skill).pipe(Effect.provideContext(env.services)))
        if (loaded._tag === "Failure") return { content, notice: loaded.failure.message }
        return {
          content: withText(Commands.forSkill(skill, loaded.success.body, located.arguments)),
          command,
          activation: { name: skill.name, path: skill.path, sha256: loaded.success.sha256, body: loaded.success.body }
        }
      }
    }
  })

/** The `skill` tool's access for a turn: loads a skill the model may load, and logs it. */
export const skillsFor = (env: Env, turn: number, extensions: Extensions): Edges.Skills["Service"] => ({
  activate: (name) =>
    Effect.gen(function*() {
      const skill = extensions.skills.find((s) => s.name === name && s.modelInvocable)
      if (skill === undefined) {
        const names = extensions.skills.filter((s) => s.modelInvocable).map((s) => s.name)
        return Tool.error(`There is no skill "${name}".${names.length > 0 ? ` The skills are: ${names.join(", ")}.` : ""}`)
      }
      const loaded = yield* Effect.result(Skills.activate(skill).pipe(Effect.provideContext(env.services)))
      if (loaded._tag === "Failure") return Tool.error(loaded.failure.message)
      const { body, sha256 } = loaded.success
      const logged = yield* Effect.exit(env.record(turn, { type: "skill_activation", data: { name: skill.name, path: skill.path, sha256, body } }))
      if (Exit.isFailure(logged)) return Tool.error(`The skill "${name}" could not be recorded in the session's log, so it was not loaded.`)
      return Tool.ok(`The skill "${skill.name}" (folder: ${skill.dir}; its files may be read without asking):\n\n${body}`)
    })
})

/** `/undo`: reverts the file changes of the last turn that has some left, and logs what it did. */
export const undo = (env: Env, turn: number): Effect.Effect<TurnOutcome, LogError | SessionError, ToolEnv> =>
  Effect.gen(function*() {
    const notice = (text: string) => env.record(turn, { type: "notice", data: { text, source: "undo" } })
    // Undoing changes files: a read-only session (plan mode) does not, whoever asks.
    const readOnly = Ceiling.whyReadOnly(env.reach())
    if (readOnly !== undefined) {
      yield* notice(`Nothing was undone: ${readOnly}, and /undo changes files. Switch to another mode to undo.`)
      return { stopReason: "end_turn" }
    }
    const events = yield* env.readLog
    const target = Undo.lastChangingTurn(events)
    if (target === undefined) {
      yield* notice(Undo.nothingToUndo)
      return { stopReason: "end_turn" }
    }
    const plan = Undo.plan(events, target)
    if (plan.files.length > 0 && env.checkpoints !== undefined) yield* env.checkpoints.before(turn)
    const result = yield* Undo.apply(plan, { roots: [env.cwd, ...env.additionalDirectories], cwd: env.cwd })
    yield* env.record(turn, {
      type: "undo",
      data: "refused" in result
        ? { turn: target, restored: [], removed: [], refused: result.refused }
        : { turn: target, restored: result.restored, removed: result.removed }
    })
    yield* notice(Undo.message(result, plan, env.cwd))
    return { stopReason: "end_turn" }
  })

/**
 * `/rewind [N]`: the files and the conversation back to before turn N (`checkpoints/Rewind.ts`,
 * loaded with the first rewind); a conflict is asked of the turn's `Questions`.
 */
export const rewind = (env: Env, turn: number, args: string): Effect.Effect<TurnOutcome, LogError | SessionError, TurnContract.Questions> =>
  Effect.gen(function*() {
    const Rewind = yield* Effect.promise(() => import("../checkpoints/Rewind.ts"))
    yield* Rewind.run({
      turn,
      arguments: args,
      cwd: env.cwd,
      events: yield* env.readLog,
      checkpoints: env.checkpoints,
      readOnly: Ceiling.whyReadOnly(env.reach()),
      record: (body) => env.record(turn, body)
    })
    return { stopReason: "end_turn" }
  })
