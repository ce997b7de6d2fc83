/**
 * A session's background commands (`bash {command, run_in_background: true}`): started by one
 * turn, read (`bash_output`) and stopped (`kill_shell`) by any later one, and owned by the
 * session, not the turn. A turn's end or cancel leaves them running; closing the session's
 * scope (close, eviction, delete, Skein's shutdown) kills every one of them and everything
 * they started, and waits for that (bounded: `ProcessGroup.terminate`). Skein dying without
 * running code (`kill -9`) is covered as for every command: each is spawned through
 * `ProcessGroup`, so its tree is contained and known to the watchdog.
 *
 * Rules:
 * - ids are `bg1`, `bg2`, … in the order started, never reused within the session;
 * - at most `maxRunning` run at once: a further start is refused with a message that says
 *   how to free a slot; finished ones are kept (to read what they printed last) up to
 *   `maxKept`, the oldest finished dropped first;
 * - each keeps what it printed since it was last read, bounded like `bash`'s output (head
 *   and tail kept, the middle counted and dropped), secrets redacted as it arrives; a read
 *   takes it, and a read whose processing failed or was interrupted (a filter that timed out, a
 *   cancelled turn) puts it back;
 * - when the command's leader exits, output may arrive for a moment, then whatever it left
 *   running is killed (as `bash` does: a command that must keep running is the leader);
 * - once the scope is closing, nothing starts: a start that raced the close kills what it
 *   spawned.
 *
 * The tools reach the session's registry through the `Current` reference, which the session
 * provides around its turns (absent elsewhere: background commands are then refused).
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import type * as Scope from "effect/Scope"
import * as Secrets from "../../secrets/Secrets.ts"
import * as OutputBuffer from "./OutputBuffer.ts"
import * as ProcessGroup from "./ProcessGroup.ts"

export const DEFAULT_MAX_RUNNING = 8
const DEFAULT_MAX_KEPT = 32
/** After the leader exits, how long output may keep arriving before leftovers are killed. */
const DRAIN_MS = 100

/** How a background command stands. */
export type Status =
  | { readonly _tag: "running" }
  /** The leader exited by itself (`signal`: killed by a signal nobody here sent); `leftovers`: what was still running then was killed. */
  | { readonly _tag: "exited"; readonly code: number | null; readonly signal: string | null; readonly leftovers: string | null }
  /** Stopped here: by `kill_shell`, or its `timeout_ms` ran out. */
  | { readonly _tag: "stopped"; readonly by: "kill_shell" | "timeout"; readonly signal: string | null; readonly timeoutMs?: number | undefined }

export interface Options {
  readonly maxRunning?: number | undefined
  readonly maxKept?: number | undefined
  readonly headBytes?: number | undefined
  readonly tailBytes?: number | undefined
}

interface Start {
  readonly command: string
  /** Starts the command as a process group; `onOutput` gets stdout and stderr as they arrive. */
  readonly spawn: (onOutput: (chunk: Uint8Array) => void) => Effect.Effect<ProcessGroup.Group, string>
  /** Kill it after this long (default: never). */
  readonly timeoutMs?: number | undefined
  /** It runs in the session's sandbox (its output may show the sandbox stopping it). */
  readonly sandboxed: boolean
}

/** What a read takes: the output since the last read, and where the command stands. */
interface Taken {
  readonly id: string
  readonly command: string
  readonly sandboxed: boolean
  readonly text: string
  /** Bytes dropped from the middle of `text` (it was over the bound). */
  readonly omitted: number
  readonly status: Status
}

interface Summary {
  readonly id: string
  readonly command: string
  readonly status: Status
}

export interface Shells {
  /** Starts a command in the background; its id. Fails with a message the model reads. */
  readonly start: (options: Start) => Effect.Effect<string, string>
  /**
   * Takes what `id` printed since the last read and its status. `use` processes the text
   * (a filter); when it fails, the text is kept for the next read and the failure returned.
   */
  readonly read: <A>(id: string, use: (taken: Taken) => Effect.Effect<A, string>) => Effect.Effect<A, string>
  /** Stops `id` and everything it started (the status after it). */
  readonly kill: (id: string) => Effect.Effect<{ readonly id: string; readonly status: Status; readonly wasRunning: boolean }, string>
  readonly list: () => ReadonlyArray<Summary>
}

/** The session's background commands, when the session provides them (see the module note). */
export const Current = Context.Reference<Shells | undefined>("skein/tools/Background", { defaultValue: () => undefined })

/** A status as the model reads it, last in a result. */
export const statusLine = (status: Status): string => {
  switch (status._tag) {
    case "running":
      return "[still running]"
    case "exited": {
      const line = status.code !== null ? `[exited with code ${status.code}]` : `[killed by ${status.signal ?? "a signal"}]`
      return status.leftovers === null ? line : `${line}\n[background processes still running at exit were killed (${status.leftovers})]`
    }
    case "stopped":
      return status.by === "kill_shell"
        ? `[stopped by kill_shell${status.signal !== null ? ` (${status.signal})` : ""}]`
        : `[killed by ${status.signal ?? "SIGTERM"} after timeout of ${status.timeoutMs} ms]`
    default: {
      const never: never = status
      return never
    }
  }
}

interface Shell {
  readonly id: string
  readonly command: string
  readonly sandboxed: boolean
  readonly group: ProcessGroup.Group
  readonly redacting: { readonly push: (chunk: Uint8Array) => Uint8Array; readonly flush: () => Uint8Array }
  unread: OutputBuffer.OutputBuffer
  /** Text a failed read put back, read before `unread`. */
  carry: { readonly text: string; readonly omitted: number } | undefined
  status: Status
  /** Set by `kill_shell` before it signals: the status says who stopped it. */
  stopping: "kill_shell" | undefined
  /** Completed once the tree is dead and released. */
  readonly done: Deferred.Deferred<void>
}

export const make = (options: Options = {}): Effect.Effect<Shells, never, Scope.Scope> =>
  Effect.gen(function*() {
    const maxRunning = options.maxRunning ?? DEFAULT_MAX_RUNNING
    const maxKept = options.maxKept ?? DEFAULT_MAX_KEPT
    const headBytes = options.headBytes ?? OutputBuffer.DEFAULT_HEAD_BYTES
    const tailBytes = options.tailBytes ?? OutputBuffer.DEFAULT_TAIL_BYTES
    const shells = new Map<string, Shell>()
    let counter = 0
    /** Starts under way (a slot is held for each while it spawns). */
    let starting = 0
    let closed = false
    // Made before the finalizer below, so that finalizer runs first: every tree is killed at
    // once, then the monitors (which release them) are awaited, then interrupted if need be.
    const monitors = yield* FiberSet.make<void>()
    const running = () => [...shells.values()].filter((shell) => shell.status._tag === "running")

    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        const left = running()
        return Effect.forEach(left, (shell) => ProcessGroup.terminate(shell.group), { concurrency: "unbounded", discard: true }).pipe(
          Effect.andThen(Effect.forEach(left, (shell) => ProcessGroup.awaitFor(shell.done, 1_000), { concurrency: "unbounded", discard: true }))
        )
      })
    )

    const finish = (shell: Shell, status: Status) =>
      Effect.sync(() => {
        shell.unread.push(shell.redacting.flush())
        shell.status = status
      })

    /** Waits for the leader (or the timeout), kills what is left, releases the tree, records how it ended. */
    const monitor = (shell: Shell, timeoutMs: number | undefined) =>
      Effect.gen(function*() {
        const { group } = shell
        const exit = timeoutMs === undefined
          ? yield* Deferred.await(group.exited)
          : yield* Deferred.await(group.exited).pipe(Effect.raceFirst(Effect.sleep(timeoutMs).pipe(Effect.as(undefined))))
        if (exit === undefined) {
          const signal = yield* ProcessGroup.terminate(group)
          yield* ProcessGroup.release(group)
          return yield* finish(shell, { _tag: "stopped", by: "timeout", signal: signal ?? "SIGTERM", timeoutMs })
        }
        yield* ProcessGroup.awaitFor(group.drained, DRAIN_MS)
        const leftovers = yield* ProcessGroup.terminate(group)
        yield* ProcessGroup.release(group)
        yield* finish(
          shell,
          shell.stopping !== undefined
            ? { _tag: "stopped", by: shell.stopping, signal: exit.signal ?? leftovers }
            : { _tag: "exited", code: exit.code, signal: exit.signal, leftovers }
        )
      }).pipe(
        // Interrupted (the scope closed under it): the tree still dies before the shell is done.
        Effect.onInterrupt(() => ProcessGroup.release(shell.group)),
        Effect.ensuring(Deferred.succeed(shell.done, undefined))
      )

    /** Finished shells beyond the bound go, oldest first. */
    const prune = () => {
      let extra = shells.size - maxKept
      for (const shell of shells.values()) {
        if (extra <= 0) return
        if (shell.status._tag === "running") continue
        shells.delete(shell.id)
        extra--
      }
    }

    const start = (how: Start): Effect.Effect<string, string> =>
      Effect.uninterruptible(Effect.suspend(() => {
        if (closed) return Effect.fail("The session is closing: no background command starts now.")
        if (running().length + starting >= maxRunning) {
          const ids = running().map((shell) => shell.id).join(", ")
          return Effect.fail(
            `Too many background commands running in this session (${maxRunning}: ${ids}). Stop one with kill_shell, or wait for one to exit.`
          )
        }
        starting++
        const unread = OutputBuffer.make(headBytes, tailBytes)
        const redacting = Secrets.registry().byteStream()
        const holder: { shell?: Shell } = {}
        // Until the shell is registered, output goes to the buffer it will have.
        const onOutput = (chunk: Uint8Array) => (holder.shell?.unread ?? unread).push(redacting.push(chunk))
        return how.spawn(onOutput).pipe(
          Effect.ensuring(Effect.sync(() => void starting--)),
          Effect.flatMap((group) => {
            if (closed) return Effect.andThen(ProcessGroup.release(group), Effect.fail("The session is closing: no background command starts now."))
            const id = `bg${++counter}`
            const shell: Shell = {
              id,
              command: how.command,
              sandboxed: how.sandboxed,
              group,
              redacting,
              unread,
              carry: undefined,
              status: { _tag: "running" },
              stopping: undefined,
              done: Deferred.makeUnsafe<void>()
            }
            holder.shell = shell
            shells.set(id, shell)
            prune()
            return Effect.as(FiberSet.run(monitors, monitor(shell, how.timeoutMs)), id)
          })
        )
      }))

    const find = (id: string): Effect.Effect<Shell, string> =>
      Effect.suspend(() => {
        const shell = shells.get(id)
        if (shell !== undefined) return Effect.succeed(shell)
        const n = /^bg([1-9]\d*)$/.exec(id)?.[1]
        if (n !== undefined && Number(n) <= counter) {
          return Effect.fail(`${id} finished long ago and is no longer kept (only the last ${maxKept} background commands are).`)
        }
        const known = [...shells.keys()]
        return Effect.fail(
          `There is no background command ${JSON.stringify(id.length > 40 ? `${id.slice(0, 40)}…` : id)} in this session` +
            (known.length > 0 ? ` (there are: ${known.join(", ")}).` : ". Background commands end with the session that started them; start one with bash and run_in_background: true.")
        )
      })

    const read = <A>(id: string, use: (taken: Taken) => Effect.Effect<A, string>): Effect.Effect<A, string> =>
      Effect.flatMap(find(id), (shell) => {
        const rendered = shell.unread.render()
        const carried = shell.carry
        shell.unread = OutputBuffer.make(headBytes, tailBytes)
        shell.carry = undefined
        const joined = carried === undefined ? rendered : OutputBuffer.boundString(carried.text + rendered.text, headBytes, tailBytes)
        const omitted = joined.omitted + (carried === undefined ? 0 : carried.omitted + rendered.omitted)
        const taken: Taken = { id, command: shell.command, sandboxed: shell.sandboxed, text: joined.text, omitted, status: shell.status }
        return use(taken).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => {
              // Failed or interrupted: put back in front of what arrived meanwhile, bounded again at the next read.
              // (In front of what another failed read put back meanwhile too: this read took first.)
              const later = shell.carry
              shell.carry = later === undefined
                ? { text: taken.text, omitted: taken.omitted }
                : { text: taken.text + later.text, omitted: taken.omitted + later.omitted }
            })
          )
        )
      })

    const kill = (id: string) =>
      Effect.flatMap(find(id), (shell) =>
        Effect.gen(function*() {
          if (shell.status._tag !== "running") return { id, status: shell.status, wasRunning: false }
          shell.stopping = "kill_shell"
          yield* ProcessGroup.terminate(shell.group)
          yield* Deferred.await(shell.done)
          return { id, status: shell.status, wasRunning: true }
        }).pipe(Effect.uninterruptible))

    return {
      start,
      read,
      kill,
      list: () => [...shells.values()].map((shell) => ({ id: shell.id, command: shell.command, status: shell.status }))
    } satisfies Shells
  })
