/**
 * Listing sessions without an index that could lie: the directory says which
 * sessions exist, a `stat` says when each was last written (`updatedAt`), and
 * the head of a log (its header and first prompt) says its cwd and title. Only
 * the heads of the sessions on the requested page are read, so a page costs
 * one directory read, one `stat` per session and a few small reads.
 *
 * Sessions are sorted newest first (then by id); the cursor is an opaque token
 * for the last session of a page, so new activity never shifts a later page.
 * `page` is that order and paging over any store's sessions (the memory store
 * keeps each head as its log grows).
 */
import * as Effect from "effect/Effect"
import * as nodeFs from "node:fs"
import type * as FileSystem from "effect/FileSystem"
import type * as Path from "effect/Path"
import { promptText, type UserBlock } from "../Vocabulary.ts"
import { LogError } from "./LogError.ts"

interface Entry {
  readonly id: string
  readonly cwd: string
  readonly additionalDirectories: ReadonlyArray<string>
  /** The first prompt, on one line, at most `TITLE_LENGTH` characters; none before the first prompt. */
  readonly title: string | undefined
  /** Creation time, ms since the epoch. */
  readonly created: number
  /** Last write to the log, ms since the epoch. */
  readonly updatedAt: number
  /** The format version in the header. */
  readonly version: number
  /** A child session's parent (its id). */
  readonly parent?: string | undefined
  /** The agent a child session runs as. */
  readonly agent?: string | undefined
  /** The session a fork was made from (its id). */
  readonly forkedFrom?: string | undefined
}

export interface Page {
  readonly sessions: ReadonlyArray<Entry>
  /** Pass it back for the next page; absent on the last page. */
  readonly nextCursor: string | undefined
}

export interface Query {
  /** Only sessions whose cwd is this (absolute) directory. */
  readonly cwd?: string | undefined
  readonly cursor?: string | undefined
  /** Page size (default 50). */
  readonly limit?: number | undefined
  /** Child sessions (subagents) too; by default only top-level sessions are listed. */
  readonly children?: boolean | undefined
}

const DEFAULT_PAGE = 50
const TITLE_LENGTH = 80
const HEAD_BYTES = 16 * 1024
const MAX_HEAD_BYTES = 1024 * 1024
const LOG_SUFFIX = ".ndjson"

/** A session id that can name a file in the sessions directory (no separators, no dot files). */
export const isSessionId = (id: string): boolean => /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/.test(id)

/** The title of a session: its first prompt, whitespace collapsed, cut to `TITLE_LENGTH`. */
export const title = (content: ReadonlyArray<UserBlock>): string | undefined => {
  const text = promptText(content).replace(/\s+/g, " ").trim()
  if (text.length === 0) return undefined
  return text.length > TITLE_LENGTH ? `${text.slice(0, TITLE_LENGTH - 1)}…` : text
}

const encodeCursor = (entry: { readonly updatedAt: number; readonly id: string }) =>
  Buffer.from(JSON.stringify([entry.updatedAt, entry.id])).toString("base64url")

const decodeCursor = (cursor: string): { readonly updatedAt: number; readonly id: string } | undefined => {
  try {
    const [updatedAt, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as [unknown, unknown]
    return typeof updatedAt === "number" && typeof id === "string" ? { updatedAt, id } : undefined
  } catch {
    return undefined
  }
}

/** Newest first, then by id: a total order, so a cursor is a position. */
const before = (a: { readonly updatedAt: number; readonly id: string }, b: { readonly updatedAt: number; readonly id: string }) =>
  a.updatedAt !== b.updatedAt ? a.updatedAt > b.updatedAt : a.id < b.id

/** What a session's listing shows from its log: its header and its first prompt. */
export interface Head {
  readonly cwd: string
  readonly additionalDirectories: ReadonlyArray<string>
  readonly created: number
  readonly version: number
  readonly title: string | undefined
  readonly parent?: string | undefined
  readonly agent?: string | undefined
  readonly forkedFrom?: string | undefined
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** A child session's parent id, from its header. */
const parentOf = (header: { readonly parent?: unknown }): string | undefined => {
  const parent = header.parent as { sessionId?: unknown } | undefined
  return typeof parent === "object" && parent !== null && typeof parent.sessionId === "string" ? parent.sessionId : undefined
}

/** The session a fork was made from, from its header. */
const forkOf = (header: { readonly forkedFrom?: unknown }): string | undefined => parentOf({ parent: header.forkedFrom })

/** Header and title from the complete lines of a log's first bytes; undefined when the header is unusable. */
const headOf = (text: string, complete: boolean): { readonly head: Head | undefined; readonly done: boolean } => {
  const lines = text.split("\n")
  if (!complete) lines.pop()
  const header = lines.length > 0 ? parse(lines[0]!) as Record<string, unknown> | undefined : undefined
  if (header === undefined) return { head: undefined, done: complete || lines.length > 0 }
  if (typeof header !== "object" || header === null || header.type !== "session" || typeof header.cwd !== "string") {
    return { head: undefined, done: true }
  }
  let found: string | undefined
  let done = complete
  for (let i = 1; i < lines.length; i++) {
    const event = parse(lines[i]!) as { type?: unknown; data?: { content?: unknown } } | undefined
    if (event?.type === "turn_start" && Array.isArray(event.data?.content)) {
      found = title(event.data.content as ReadonlyArray<UserBlock>)
      done = true
      break
    }
  }
  const dirs = Array.isArray(header.additionalDirectories) ? header.additionalDirectories.filter((d): d is string => typeof d === "string") : []
  return {
    head: {
      cwd: header.cwd,
      additionalDirectories: dirs,
      created: typeof header.created === "number" ? header.created : 0,
      version: typeof header.v === "number" ? header.v : 0,
      title: found,
      ...(parentOf(header) !== undefined ? { parent: parentOf(header) } : {}),
      ...(typeof header.agent === "string" ? { agent: header.agent } : {}),
      ...(forkOf(header) !== undefined ? { forkedFrom: forkOf(header) } : {})
    },
    done
  }
}

/** Reads the head of a log: more only while the first prompt is not complete (at most 1 MiB). Synchronous: a few small reads. */
const readHead = (_fs: FileSystem.FileSystem, file: string): Effect.Effect<Head | undefined> =>
  Effect.sync(() => {
    let fd: number | undefined
    try {
      fd = nodeFs.openSync(file, "r")
      const decoder = new TextDecoder()
      let text = ""
      let read = 0
      for (;;) {
        const want = read === 0 ? HEAD_BYTES : Math.min(read, MAX_HEAD_BYTES - read)
        const buffer = Buffer.allocUnsafe(want)
        const n = nodeFs.readSync(fd, buffer, 0, want, read)
        if (n > 0) {
          read += n
          text += decoder.decode(buffer.subarray(0, n), { stream: true })
        }
        const atEnd = n === 0 || read >= MAX_HEAD_BYTES
        const { head, done } = headOf(text, atEnd)
        if (done || atEnd) return head
      }
    } catch {
      return undefined
    } finally {
      if (fd !== undefined) nodeFs.closeSync(fd)
    }
  })

/**
 * One page of sessions, given each one's id and last activity: sorted newest first, after the
 * query's cursor, filtered by cwd. Only the heads of the sessions the page needs are read
 * (`readHead`; undefined skips a session whose log is unusable).
 */
export const page = (
  stamped: ReadonlyArray<{ readonly id: string; readonly updatedAt: number }>,
  query: Query,
  readHead: (id: string) => Effect.Effect<Head | undefined>
): Effect.Effect<Page, LogError> =>
  Effect.gen(function*() {
    const limit = Math.max(1, query.limit ?? DEFAULT_PAGE)
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor)
    if (query.cursor !== undefined && after === undefined) {
      return yield* new LogError({ reason: "corrupt", message: "Invalid cursor" })
    }
    const candidates = stamped
      .filter((s) => after === undefined || before(after, s))
      .sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0))

    const sessions: Array<Entry> = []
    let next = 0
    while (sessions.length < limit && next < candidates.length) {
      const batch = candidates.slice(next, next + limit - sessions.length)
      next += batch.length
      const heads = yield* Effect.forEach(batch, (c) => readHead(c.id), { concurrency: 32 })
      batch.forEach((c, i) => {
        const head = heads[i]
        if (head === undefined) return
        if (query.cwd !== undefined && head.cwd !== query.cwd) return
        if (head.parent !== undefined && query.children !== true) return
        sessions.push({ id: c.id, updatedAt: c.updatedAt, ...head })
      })
    }
    const last = sessions[sessions.length - 1]
    const more = next < candidates.length && last !== undefined
    return { sessions, nextCursor: more ? encodeCursor(last) : undefined }
  })

/** One page of the sessions in `directory`. */
export const list = (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  directory: string,
  query: Query
): Effect.Effect<Page, LogError> =>
  Effect.gen(function*() {
    if (query.cursor !== undefined && decodeCursor(query.cursor) === undefined) {
      return yield* new LogError({ reason: "corrupt", message: "Invalid cursor" })
    }
    const names = yield* fs.readDirectory(directory).pipe(
      Effect.catch((error) =>
        error.reason._tag === "NotFound"
          ? Effect.succeed([] as Array<string>)
          : Effect.fail(new LogError({ reason: "io", message: `Cannot list ${directory}: ${error.reason._tag}` }))
      )
    )
    const ids = names.filter((n) => n.endsWith(LOG_SUFFIX)).map((n) => n.slice(0, -LOG_SUFFIX.length)).filter(isSessionId)
    // One synchronous stat per log (a few µs each) instead of an async one through the thread pool.
    const stamped = yield* Effect.sync(() =>
      ids.flatMap((id) => {
        try {
          return [{ id, updatedAt: nodeFs.statSync(path.join(directory, id + LOG_SUFFIX)).mtimeMs }]
        } catch {
          return []
        }
      })
    )
    return yield* page(stamped, query, (id) => readHead(fs, path.join(directory, id + LOG_SUFFIX)))
  })
