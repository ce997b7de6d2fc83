/**
 * The files a turn's tools read and write, as one service with two implementations, chosen
 * once per turn (`runtime/TurnServices.ts`), never per tool:
 *
 * - `local`: the disk, through `SafeFs` (what was checked is what is read and written);
 * - `client(access)`: the client's editor where it offers it (ACP `fs/read_text_file`,
 *   `fs/write_text_file`: unsaved buffers are what the user sees, an edit lands in its buffer),
 *   the disk for what it does not offer.
 *
 * The tools (`read`, `write`, `edit`) resolve and confine the path, open it with `SafeFs` and
 * hold its lock themselves; this service is only where a file's text comes from and where its
 * new content goes. A problem is data (`Problem`) the tool words for the model.
 */
import type { FileHandle } from "node:fs/promises"
import * as NodePath from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as SafeFs from "../fs/SafeFs.ts"
import * as TextWindow from "./TextWindow.ts"

/** Why a file could not be read or stored: on disk, in the editor, or not text. */
export type Problem =
  | { readonly _tag: "Disk"; readonly error: SafeFs.Failure }
  | { readonly _tag: "Editor"; readonly message: string }
  | { readonly _tag: "Binary" }
  | { readonly _tag: "NotUtf8" }

/** What the client's editor offers of files (each operation when it offers it). Fails with a message. */
export interface ClientFiles {
  /** Reads a file as the editor sees it (unsaved buffers included). */
  readonly readTextFile?: ((path: string) => Effect.Effect<string, string>) | undefined
  /** Writes a file through the editor (the edit lands in its buffer). */
  readonly writeTextFile?: ((path: string, content: string) => Effect.Effect<void, string>) | undefined
}

/** A new content for the file `absolute`, whose directory the tool opened (created) inside the roots. */
export interface Target {
  readonly absolute: string
  readonly directory: SafeFs.Directory
  readonly roots: SafeFs.RealRoots
  readonly content: string
  /** The permissions to keep (a replaced file's); `undefined` for a new file. */
  readonly mode: number | undefined
  /** Replace only if the file is still what was read (an edit), so a change made meanwhile is not lost. */
  readonly expected?: SafeFs.Expected | undefined
  /** The call that writes (names its temporary file). */
  readonly toolCallId: string
}

export interface Shape {
  /** Lines of the regular file `absolute`, opened by the tool as `handle`, as the user sees them. */
  readonly window: (file: { readonly absolute: string; readonly handle: FileHandle }, offset: number, limit: number) => Effect.Effect<TextWindow.Window, Problem>
  /** The text of the regular file `absolute`, whose bytes on disk are `bytes`, as the user sees it. */
  readonly text: (absolute: string, bytes: Uint8Array) => Effect.Effect<string, Problem>
  /** Stores a file's new content. */
  readonly store: (target: Target) => Effect.Effect<void, Problem>
}

const disk = (error: SafeFs.Failure): Problem => ({ _tag: "Disk", error })
const editor = (message: string): Problem => ({ _tag: "Editor", message })

type NotText = Extract<Problem, { readonly _tag: "Binary" | "NotUtf8" }>

/** Bytes as text for a change: refused when binary (a NUL early on) or not UTF-8. */
export const strictText = (bytes: Uint8Array): Effect.Effect<string, NotText> =>
  bytes.subarray(0, 8192).includes(0)
    ? Effect.fail({ _tag: "Binary" })
    : Effect.try({
      try: () => new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes),
      catch: (): NotText => ({ _tag: "NotUtf8" })
    })

const local: Shape = {
  window: (file, offset, limit) => Effect.mapError(TextWindow.ofFile(file.handle, offset, limit), disk),
  text: (_absolute, bytes) => strictText(bytes),
  store: (target) =>
    Effect.gen(function*() {
      const unique = (yield* Random.nextIntBetween(0, 2 ** 31 - 1)).toString(36)
      const tag = `${target.toolCallId.replace(/[^A-Za-z0-9_-]/g, "").slice(0, 24)}${unique}`
      yield* SafeFs.writeAtomic(target.directory, NodePath.basename(target.absolute), new TextEncoder().encode(target.content), target.roots, {
        mode: target.mode,
        tag,
        expected: target.expected
      }).pipe(Effect.mapError(disk))
    })
}

/** The editor's operations where the client offers them, the disk's for the others. */
const client = (access: ClientFiles): Shape => {
  const read = access.readTextFile
  const write = access.writeTextFile
  return {
    window: read === undefined ? local.window : (file, offset, limit) =>
      // The disk's first bytes still say whether it is binary (the editor would give text anyway).
      local.window(file, offset, limit).pipe(Effect.flatMap((window) =>
        TextWindow.looksBinary(window.firstChunk)
          ? Effect.succeed(window)
          : Effect.mapError(Effect.map(read(file.absolute), (text) => TextWindow.ofText(text, offset, limit)), editor)
      )),
    // The disk's bytes still say whether it is text at all: a binary or non-UTF-8 file is refused
    // as the disk refuses it (the editor would give text anyway, and writing it back would change every byte).
    text: read === undefined ? local.text : (absolute, bytes) => Effect.andThen(strictText(bytes), Effect.mapError(read(absolute), editor)),
    store: write === undefined ? local.store : (target) => Effect.mapError(write(target.absolute, target.content), editor)
  }
}

export class Files extends Context.Service<Files, Shape>()("skein/tools/Files") {
  /** The disk only. */
  static readonly local: Shape = local
  /** The client's editor for what it offers, the disk for the rest. */
  static readonly client: (access: ClientFiles) => Shape = client
}
