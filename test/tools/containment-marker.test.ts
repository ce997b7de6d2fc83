/**
 * Containment by the environment marker plus the process group: the fallback where no cgroup
 * is available, forced here with SKEIN_NO_CGROUP=1 (Linux: it reads /proc).
 */
import { describe } from "@effect/vitest"
import { containmentSuite } from "./containment.suite.ts"

process.env["SKEIN_NO_CGROUP"] = "1"

describe.skipIf(process.platform !== "linux")("containment: environment marker (SKEIN_NO_CGROUP=1)", () => containmentSuite("marker"))
