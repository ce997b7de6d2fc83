/**
 * Whether this machine has what the sandbox needs, without running anything: Linux, `bwrap`
 * (bubblewrap) and `nsenter` (util-linux) installed, user namespaces not switched off. A few
 * `stat`s, cheap enough for `initialize`; whether a sandbox really works is known only from
 * the probe (`Sandbox.ts`), which runs when a session first needs it.
 */
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import type { Tools } from "./Policy.ts"

/** A program on the PATH (or in the system's directories), as an absolute path. */
const which = (name: string): string | undefined => {
  const dirs = `${process.env["PATH"] ?? ""}:/usr/bin:/bin:/usr/sbin:/sbin`.split(":").filter((dir) => dir.startsWith("/"))
  for (const dir of dirs) {
    const candidate = NodePath.join(dir, name)
    try {
      // Most directories do not have it: a missing file is `undefined`, not an error (an error
      // costs several times a stat, and `initialize` waits for this).
      const stat = NodeFs.statSync(candidate, { throwIfNoEntry: false })
      if (stat === undefined || !stat.isFile()) continue
      NodeFs.accessSync(candidate, NodeFs.constants.X_OK)
      return candidate
    } catch {
      // Not here.
    }
  }
  return undefined
}

/** The programs the sandbox needs, or what is missing. */
export const findTools = (): Tools | { readonly missing: string } => {
  if (process.platform !== "linux") return { missing: `there is no sandbox for ${process.platform} yet` }
  const bwrap = which("bwrap")
  if (bwrap === undefined) return { missing: "bwrap is not installed (the bubblewrap package)" }
  const nsenter = which("nsenter")
  if (nsenter === undefined) return { missing: "nsenter is not installed (util-linux)" }
  return { bwrap, nsenter }
}

/** Why there will be no sandbox here, or undefined when there likely is one. */
export const unlikely = (): string | undefined => {
  const tools = findTools()
  if ("missing" in tools) return tools.missing
  try {
    if (Number(NodeFs.readFileSync("/proc/sys/user/max_user_namespaces", "utf8").trim()) === 0) return "user namespaces are switched off (user.max_user_namespaces = 0)"
  } catch {
    // No such setting: the probe will tell.
  }
  return undefined
}
