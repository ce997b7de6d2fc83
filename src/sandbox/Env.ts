/**
 * The environment of a sandboxed command, from one already without the secrets Skein knows
 * (`Secrets.childEnv`). Pure.
 *
 * - Pointers to agents and buses outside are dropped (their sockets are unreachable anyway):
 *   `SSH_AUTH_SOCK`, `GPG_AGENT_INFO`, `DBUS_SESSION_BUS_ADDRESS`, `DOCKER_HOST`, …
 * - `TMPDIR` is the private /tmp; caches that tools write under the home (read-only inside)
 *   go to the private /tmp too (`XDG_CACHE_HOME`, npm's cache), so builds and installs work.
 * - With a proxy port, every proxy variable tools read points at it (both cases: curl reads
 *   only the lower-case `http_proxy`), and local addresses bypass it (a dev server the
 *   session runs is reached directly).
 */

const DROPPED = new Set([
  "SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "DOCKER_HOST", "CONTAINER_HOST",
  "XDG_RUNTIME_DIR", "WAYLAND_DISPLAY", "DISPLAY", "XAUTHORITY", "KRB5CCNAME", "GIT_ASKPASS", "SSH_ASKPASS",
  // Whatever a proxy of Skein's own environment says: inside, the sandbox's proxy decides.
  "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy",
  "npm_config_proxy", "npm_config_https_proxy", "NPM_CONFIG_PROXY", "NPM_CONFIG_HTTPS_PROXY", "npm_config_noproxy"
])

export const NO_PROXY = "localhost,127.0.0.1,::1"

export const environment = (base: Readonly<Record<string, string>>, proxyPort: number | undefined): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(base)) if (!DROPPED.has(name)) out[name] = value
  out["TMPDIR"] = "/tmp"
  out["XDG_CACHE_HOME"] = "/tmp/.cache"
  out["npm_config_cache"] = "/tmp/.npm"
  if (proxyPort !== undefined) {
    const url = `http://127.0.0.1:${proxyPort}`
    for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "npm_config_proxy", "npm_config_https_proxy"]) {
      out[name] = url
    }
    out["NO_PROXY"] = NO_PROXY
    out["no_proxy"] = NO_PROXY
    // Node's own fetch and http use the proxy variables only when told to.
    out["NODE_USE_ENV_PROXY"] = "1"
  }
  return out
}
