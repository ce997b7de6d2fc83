/**
 * Containment with a cgroup per command (Linux with a writable cgroup v2 subtree: root, or a
 * delegated systemd user session). Elsewhere the whole file is skipped, and says why.
 */
import { describe } from "@effect/vitest"
import { cgroupsWritable } from "../support/Escapes.ts"
import { containmentSuite } from "./containment.suite.ts"

delete process.env["SKEIN_NO_CGROUP"]
const writable = cgroupsWritable()

describe.skipIf(!writable)(
  writable ? "containment: cgroup" : "containment: cgroup (skipped: no writable cgroup v2 subtree for this user here)",
  () => containmentSuite("cgroup")
)
