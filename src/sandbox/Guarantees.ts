/**
 * What the sandbox guarantees, stated for clients (`initialize` → `_meta.skein.sandbox`) in
 * the shape of ACP RFD #1063 ("Sandbox Capability and Policy": `mode` and `guarantees` with
 * `fsIsolation`, `netIsolation`, `processCaps`), plus Skein's own fields. Pure.
 *
 * - `mode`: `"custom"` (bubblewrap is not among the RFD's named modes) where commands run
 *   sandboxed, `"host"` where they do not.
 * - `guarantees.fsIsolation`: `"workspace"` (writes only in the session's roots and a private
 *   /tmp; credentials hidden); `netIsolation`: `"denyAll"`, or `"restricted"` with hosts
 *   allowed through the proxy; `processCaps`: no capabilities, no new privileges, a PID
 *   namespace per command.
 * - `setting`: auto | required | off. `fallback: "ask"` (auto): where the sandbox turns out not
 *   to work (the probe runs at the first command), commands are asked for instead, and the
 *   session is told. `required` has no fallback: such commands are refused.
 * - `reason`: why there is no sandbox, when it is known without running anything.
 */
import type { Settings } from "./Settings.ts"

export interface Statement {
  readonly mode: "custom" | "host"
  readonly mechanism?: "bubblewrap" | undefined
  readonly guarantees: {
    readonly fsIsolation: "workspace" | "none"
    readonly netIsolation: "denyAll" | "restricted" | "none"
    readonly processCaps: boolean
  }
  readonly setting: Settings["mode"]
  readonly fallback?: "ask" | undefined
  readonly network?: { readonly allow: ReadonlyArray<string> } | undefined
  readonly reason?: string | undefined
}

const NONE = { fsIsolation: "none", netIsolation: "none", processCaps: false } as const

/** The statement for `settings`, where `unavailable` says why there is no sandbox (if known). */
export const statement = (settings: Settings, unavailable: string | undefined): Statement => {
  if (settings.mode === "off") return { mode: "host", guarantees: NONE, setting: "off" }
  const sandboxed = {
    mechanism: "bubblewrap",
    guarantees: {
      fsIsolation: "workspace",
      netIsolation: settings.allow.length > 0 ? "restricted" : "denyAll",
      processCaps: true
    },
    ...(settings.allow.length > 0 ? { network: { allow: settings.allow } } : {})
  } as const
  if (settings.mode === "required") {
    // Guaranteed either way: a command that cannot run sandboxed does not run.
    return { mode: "custom", ...sandboxed, setting: "required", ...(unavailable !== undefined ? { reason: unavailable } : {}) }
  }
  if (unavailable !== undefined) return { mode: "host", guarantees: NONE, setting: "auto", fallback: "ask", reason: unavailable }
  return { mode: "custom", ...sandboxed, setting: "auto", fallback: "ask" }
}

/** The lines `skein doctor` prints for the sandbox, from what the probe found. */
export const report = (settings: Settings, probe: { readonly available: true; readonly seccomp: boolean } | { readonly available: false; readonly reason: string }): ReadonlyArray<string> => {
  const out = [`Sandbox (setting: ${settings.mode})`]
  if (settings.mode === "off") {
    out.push("  off: commands run with your full access, and are asked for (except in bypassPermissions)")
    return out
  }
  if (!probe.available) {
    out.push(`  not available here: ${probe.reason}`)
    out.push(settings.mode === "required"
      ? "  required: every command is refused until it is available"
      : "  auto: commands run unsandboxed and are asked for, as without a sandbox (each session is told once)")
    return out
  }
  out.push("  available (bubblewrap), enforced for every command Skein starts:")
  out.push("    files      writes only in the session's roots and a private /tmp; .git/config and .git/hooks read-only")
  out.push("               hidden: Skein's home, ~/.ssh, ~/.aws, ~/.gnupg, ~/.netrc, ~/.git-credentials, cloud and registry credentials")
  if (settings.denyRead.length > 0) out.push(`               also hidden: ${settings.denyRead.join(", ")}`)
  if (settings.allowWrite.length > 0) out.push(`               also writable: ${settings.allowWrite.join(", ")}`)
  out.push(settings.allow.length > 0
    ? `    network    only through Skein's proxy, to: ${settings.allow.join(", ")}`
    : "    network    none (sandbox.network.allow lists hosts to open)")
  out.push(`    processes  a PID namespace per command; no capabilities${probe.seccomp ? "; unix sockets refused" : " (no seccomp filter for this architecture: unix sockets are not refused)"}`)
  out.push("    permission commands run without a question in default and acceptEdits; sandbox: false asks")
  return out
}
