/**
 * Real temporary directories for tests that touch the file system, and the Node platform layer.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** FileSystem and Path on Node. */
export const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)

/** Creates a fresh directory (its real path); removed with everything in it when the scope closes. */
export const make = (prefix = "skein-test-") =>
  Effect.acquireRelease(
    Effect.sync(() => realpathSync(mkdtempSync(join(tmpdir(), prefix)))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )
