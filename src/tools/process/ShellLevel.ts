/**
 * The `SHLVL` of a process Skein starts, so that no bash among them reads the user's
 * `~/.bashrc`. Pure.
 *
 * bash runs `~/.bashrc` for `bash -c COMMAND`, non-interactive as it is, when it guesses that
 * sshd started it: its stdin is a socket (Node's pipes to a child are socket pairs: every MCP
 * stdio server, external agent and hook gets one) or `SSH_CLIENT` is set (Skein itself run over
 * ssh), and it is a top-level shell, which it reads from `SHLVL`: absent, empty, not a number,
 * 0 or below, or past 999 (bash then starts again at 1). A `.bashrc` that prints corrupts a
 * stdio protocol; its aliases and functions change what a hook runs. An editor started from a
 * desktop, where no shell set `SHLVL`, passes none to Skein.
 *
 * So `SHLVL` is made to say "started from a shell" (`1`, bash then counts itself at 2) where
 * it does not already; a value that does is left alone. Set for the process Skein starts, it
 * reaches what that process starts in turn (a sandbox's bubblewrap passes it on; bash exports
 * its own level).
 */

/**
 * Whether bash started with this `SHLVL` counts itself a top-level shell: it reads a decimal
 * integer (blanks around it allowed; anything else is 0), adds 1, and starts again at 1 from
 * 1000 on.
 */
export const topLevel = (shlvl: string | undefined): boolean => {
  const text = shlvl?.trim() ?? ""
  const level = /^[+-]?[0-9]+$/.test(text) ? Number(text) + 1 : 1
  return level < 2 || level >= 1000
}

/** `env` with `SHLVL` set to 1 where bash would count itself a top-level shell; the same object otherwise. */
export const nested = (env: Readonly<Record<string, string>>): Readonly<Record<string, string>> =>
  topLevel(env["SHLVL"]) ? { ...env, SHLVL: "1" } : env
