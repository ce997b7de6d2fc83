/**
 * CPU-bound tool work (a model's regular expression over file contents, its
 * glob over paths, many edits of a large file, a web page turned into Markdown) runs on worker threads, never
 * on the thread that serves the protocol: a pattern such as `(a+)+$` can take
 * exponential time, and while it runs no session gets an update and no
 * `session/cancel` is read.
 *
 * A call borrows a worker for its whole work (`use`), under a time limit.
 * Workers start on first use, never at start-up. After a search that ended
 * normally the worker stays warm for the next one (a start costs tens of ms, a
 * request to a warm worker a fraction of one); one that was interrupted
 * (cancelled, timed out) or failed is terminated at once, which stops even a
 * regular expression in the middle of its backtracking.
 *
 * The pool is per process, like Node's own thread pool: threads are a process
 * resource, and every session and runtime in it shares them. An idle worker
 * never keeps the process alive and is ended after a minute unused.
 */
import type { Worker } from "node:worker_threads"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Semaphore from "effect/Semaphore"
import * as Edits from "./edits.ts"
import type { TextResult } from "./match.ts"
import type { Reply, Request } from "./worker.ts"
import { workerScript } from "./workerScript.ts"

/** How long one call may use a worker; then its work is stopped and the call says so. */
export const TimeLimit = Context.Reference<Duration.Duration>("skein/tools/worker/TimeLimit", {
  defaultValue: () => Duration.seconds(30)
})

/** Workers busy at once in a process; a further call waits for one. */
const MAX_WORKERS = 4
/** A worker's JavaScript heap: a pattern that needs more fails its call, not the process. */
const HEAP_MB = 256
/** How long a worker that finished a call with requests left running may take to answer them. */
const DRAIN_MS = 100
/** How long the warm worker waits for the next call before it is ended. */
const IDLE_MS = 60_000

/** A worker thread and its open requests. */
export interface Handle {
  readonly worker: Worker
  readonly pending: Map<number, (reply: Reply) => void>
  nextId: number
  /** Why it can no longer answer (it crashed or exited), once it cannot. */
  failure: string | undefined
  /** A request was given up while the worker may still be running it. */
  abandoned: boolean
  exited: boolean
}

let idle: { readonly handle: Handle; readonly timer: ReturnType<typeof setTimeout> } | undefined
let live = 0
const permits = Semaphore.makeUnsafe(MAX_WORKERS)

/** Worker threads alive in this process (searching or warm). */
export const liveWorkers = (): number => live

const markExited = (handle: Handle) => {
  if (handle.exited) return
  handle.exited = true
  live--
}

const fail = (handle: Handle, message: string) => {
  handle.failure ??= message
  const waiting = [...handle.pending]
  handle.pending.clear()
  for (const [id, resolve] of waiting) resolve({ id, ok: false, message: handle.failure })
}

const spawn = Effect.sync((): Handle => {
  // Loaded on first use: start-up never pays for worker_threads.
  const { Worker } = process.getBuiltinModule("node:worker_threads")
  const script = workerScript()
  const worker = new Worker(script.code, {
    eval: script.eval,
    workerData: script.markdown === undefined ? undefined : { markdown: script.markdown },
    name: "skein-tools",
    // stdout belongs to the protocol: whatever a worker might print goes to stderr.
    stdout: true,
    stderr: true,
    resourceLimits: { maxOldGenerationSizeMb: HEAP_MB }
  })
  const toStderr = (chunk: Uint8Array) => process.stderr.write(chunk)
  worker.stdout.on("data", toStderr)
  worker.stderr.on("data", toStderr)
  live++
  const handle: Handle = { worker, pending: new Map(), nextId: 0, failure: undefined, abandoned: false, exited: false }
  worker.on("message", (reply: Reply) => {
    const resolve = handle.pending.get(reply.id)
    handle.pending.delete(reply.id)
    resolve?.(reply)
  })
  worker.on("error", (error) => fail(handle, `the tool worker failed: ${error.message}`))
  worker.on("exit", () => {
    fail(handle, "the tool worker stopped")
    markExited(handle)
    if (idle?.handle === handle) {
      clearTimeout(idle.timer)
      idle = undefined
    }
  })
  return handle
})

const stop = (handle: Handle) =>
  Effect.tryPromise(() => handle.worker.terminate()).pipe(
    Effect.ignore,
    Effect.andThen(Effect.sync(() => markExited(handle)))
  )

const acquire = Effect.suspend(() => {
  const warm = idle
  idle = undefined
  if (warm === undefined) return spawn
  clearTimeout(warm.timer)
  if (warm.handle.failure !== undefined) return spawn
  warm.handle.worker.ref()
  return Effect.succeed(warm.handle)
})

// A call that ended well may have left requests running (a search that had seen enough): the
// worker is kept only once it has answered them, soon; else the next call would wait behind work
// nobody reads. After an interruption, a time limit or a failure, it is terminated at once.
const release = (handle: Handle, exit: Exit.Exit<unknown, unknown>) =>
  Effect.gen(function*() {
    if (Exit.isSuccess(exit) && handle.abandoned && handle.failure === undefined) {
      handle.abandoned = false
      // Answered in order: the reply to a ping means everything before it is done.
      yield* request(handle, "ping", {}).pipe(Effect.timeoutOption(DRAIN_MS), Effect.ignore)
    }
    const reusable = Exit.isSuccess(exit) && !handle.abandoned && handle.failure === undefined && handle.pending.size === 0
    if (!reusable || idle !== undefined) return yield* stop(handle)
    handle.worker.unref()
    // A timer of Node's own, unreferenced: it must not keep the process alive, as an Effect sleep would.
    const timer = setTimeout(() => {
      if (idle?.handle !== handle) return
      idle = undefined
      Effect.runFork(stop(handle))
    }, IDLE_MS)
    timer.unref()
    idle = { handle, timer }
  })

/** Ends the warm worker now rather than after a minute unused (an embedding program done with Skein, a test). */
export const endIdle: Effect.Effect<void> = Effect.suspend(() => {
  const warm = idle
  idle = undefined
  if (warm === undefined) return Effect.void
  clearTimeout(warm.timer)
  return stop(warm.handle)
})

/**
 * Runs `work` with a worker of its own, for at most `TimeLimit`: `None` when
 * the limit stopped it (the worker is then terminated, as on interruption).
 */
export const use = <A, E, R>(work: (handle: Handle) => Effect.Effect<A, E, R>): Effect.Effect<Option.Option<A>, E, R> =>
  Effect.gen(function*() {
    const limit = yield* TimeLimit
    return yield* permits.withPermit(
      Effect.acquireUseRelease(acquire, (handle) => Effect.timeoutOption(work(handle), limit), release)
    )
  })

/** What each kind of request answers. */
interface Results {
  readonly ping: null
  readonly grep: TextResult
  readonly glob: ReadonlyArray<number>
  readonly edit: Edits.Applied
  readonly markdown: string
}

const request = <Op extends Request["op"]>(
  handle: Handle,
  op: Op,
  body: Omit<Extract<Request, { readonly op: Op }>, "id" | "op">,
  transfer: ReadonlyArray<ArrayBuffer> = []
): Effect.Effect<Results[Op], string> =>
  Effect.callback<Results[Op], string>((resume) => {
    if (handle.failure !== undefined) return resume(Effect.fail(handle.failure))
    const id = handle.nextId++
    // The worker answers each op with its own result type (./worker.ts).
    handle.pending.set(id, (reply) => resume(reply.ok ? Effect.succeed(reply.value as Results[Op]) : Effect.fail(reply.message)))
    handle.worker.postMessage({ ...body, op, id }, [...transfer])
    return Effect.sync(() => {
      if (handle.pending.delete(id)) handle.abandoned = true
    })
  })

/** The lines of a file's bytes that `regex` matches (the bytes are handed over, not copied, when they can be). */
export const grep = (handle: Handle, regex: RegExp, bytes: Uint8Array, keep: number): Effect.Effect<TextResult, string> => {
  const whole = bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
  return request(handle, "grep", { source: regex.source, flags: regex.flags, bytes, keep }, whole ? [bytes.buffer] : [])
}

/** The indices of the `paths` that the glob `pattern` matches. */
export const glob = (handle: Handle, pattern: string, paths: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<number>, string> =>
  request(handle, "glob", { pattern, paths })

/**
 * Characters of scanning (file size times number of edits) an edit may do on
 * this thread: a few ms. Its cost is known up front, unlike a pattern's, so
 * the usual small edit never waits for a worker.
 */
export const INLINE_EDIT_WORK = 2_000_000

/** A file's text after `edits` (see `Edits.rewrite`), in the worker when it is large work; `None` past the time limit. */
export const rewrite = (original: string, edits: ReadonlyArray<Edits.Edit>, shown: string): Effect.Effect<Option.Option<Edits.Applied>, string> =>
  original.length * edits.length <= INLINE_EDIT_WORK
    ? Effect.sync(() => Option.some(Edits.rewrite(original, edits, shown)))
    : use((handle) => request(handle, "edit", { original, edits, shown }))

/** A web page's HTML (fetched from `url`) as Markdown (`./html.ts`), on a worker; `None` past the time limit. */
export const markdown = (html: string, url: string): Effect.Effect<Option.Option<string>, string> =>
  use((handle) => request(handle, "markdown", { html, url }))

/** A time limit as the model reads it, e.g. "30 s". */
export const formatLimit = (limit: Duration.Duration): string => `${Number(Duration.toSeconds(limit).toFixed(2))} s`
