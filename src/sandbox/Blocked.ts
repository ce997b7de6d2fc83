/**
 * Telling the model that the sandbox stopped a command, from what the command printed.
 * Pure. The sandbox's refusals reach a command as ordinary errors (a read-only file system,
 * an unreachable network, a proxy's 403); without a word the model would take them for a
 * broken machine and try workarounds.
 */

/** What the sandbox refused, recognized in a command's output. */
type Refusal = "write" | "network"

const SIGNS: ReadonlyArray<{ readonly refusal: Refusal; readonly pattern: RegExp }> = [
  { refusal: "write", pattern: /Read-only file system|\bEROFS\b/ },
  { refusal: "network", pattern: /Network is unreachable|\bENETUNREACH\b|Could not resolve host|Temporary failure in name resolution|\bEAI_AGAIN\b|getaddrinfo ENOTFOUND|Name or service not known|No address associated with hostname/ },
  { refusal: "network", pattern: /blocked by Skein's sandbox|CONNECT tunnel failed, response 403|Tunnel connection failed: 403/ }
]

/** The refusals a command's output shows, in the order above (each once). */
export const refusals = (output: string): ReadonlyArray<Refusal> => {
  const found: Array<Refusal> = []
  for (const sign of SIGNS) if (!found.includes(sign.refusal) && sign.pattern.test(output)) found.push(sign.refusal)
  return found
}

/**
 * The line added to a sandboxed command's result when its output shows a refusal, or
 * undefined. `outsideAllowed`: whether the model may ask to run it outside (not with the
 * sandbox `required`). `networkAllowed`: hosts the proxy admits, if any.
 */
export const hint = (output: string, options: { readonly outsideAllowed: boolean; readonly networkAllowed: ReadonlyArray<string> }): string | undefined => {
  const found = refusals(output)
  if (found.length === 0) return undefined
  const what = found.map((refusal) =>
    refusal === "write"
      ? "writes outside the workspace, its /tmp and git's own configuration and hooks"
      : options.networkAllowed.length > 0
      ? `network access except through its proxy to ${options.networkAllowed.slice(0, 5).join(", ")}${options.networkAllowed.length > 5 ? ", …" : ""}`
      : "all network access"
  )
  const how = options.outsideAllowed
    ? "If the command really needs that, call bash again with `\"sandbox\": false` and a `\"reason\"`: the user is asked whether to run it outside the sandbox."
    : "The sandbox is required here: commands cannot run outside it."
  return `[sandbox] This command ran in Skein's sandbox, which blocks ${what.join(" and ")}; the error above may come from that. ${how}`
}
