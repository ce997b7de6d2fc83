/**
 * The sandbox setting and what `config.json` may say of it. Pure.
 *
 * - `mode`: `auto` (default: on wherever the platform sandbox works), `required` (a command
 *   that cannot run sandboxed is refused, and none runs outside it), `off`.
 *   From `--sandbox`, else `SKEIN_SANDBOX`, else `config.json` `sandbox`.
 * - `config.json` takes `"sandbox": "auto"` or an object:
 *   `{"mode": "auto", "network": {"allow": ["registry.npmjs.org", "*.github.com"]},
 *     "denyRead": ["~/work/secrets"], "allowWrite": ["~/.cache/ms-playwright"]}`.
 *   `denyRead` adds places to the ones the sandbox hides; `allowWrite` adds places
 *   commands may write besides the session's roots. Paths are absolute or start with `~/`.
 * A value that is not understood is an error, never a silent weakening.
 */

export type Mode = "auto" | "required" | "off"

const MODES: ReadonlyArray<Mode> = ["auto", "required", "off"]

export interface Settings {
  readonly mode: Mode
  /** Hosts commands may reach through the egress proxy (`*.example.com` matches its subdomains). Empty: no network. */
  readonly allow: ReadonlyArray<string>
  /** More places commands cannot read (absolute, `~` expanded). */
  readonly denyRead: ReadonlyArray<string>
  /** More places commands may write (absolute, `~` expanded). */
  readonly allowWrite: ReadonlyArray<string>
}

export const DEFAULT: Settings = { mode: "auto", allow: [], denyRead: [], allowWrite: [] }

/** The setting with nothing configured but a mode. */
export const ofMode = (mode: Mode): Settings => ({ ...DEFAULT, mode })

/** What an embedder's configuration says (a mode, whole settings, or nothing: `auto`), as settings. */
export const normalize = (value: Mode | Settings | undefined): Settings => (typeof value === "object" ? value : ofMode(value ?? "auto"))

const isMode = (value: unknown): value is Mode => typeof value === "string" && (MODES as ReadonlyArray<string>).includes(value)

/** A host name, an IPv4 address, a bracketed IPv6 address, or `*.` and a name. */
const HOST = /^(\*\.)?([a-z0-9_]([a-z0-9_-]{0,62})?)(\.[a-z0-9_]([a-z0-9_-]{0,62})?)*\.?$|^\[[0-9a-f:.]+\]$|^[0-9a-f:]+:[0-9a-f:.]*$/i

const isHostPattern = (value: string): boolean => value.length <= 253 && HOST.test(value)

const KEYS = new Set(["mode", "network", "denyRead", "allowWrite"])

/**
 * Expands a configured path: absolute, or `~`/`~/…` under `home`. Anything else (relative,
 * `~user`) is refused: a path that means something else in each directory protects nothing.
 */
const expandPath = (raw: string, home: string): string | undefined => {
  if (raw === "~") return home
  if (raw.startsWith("~/")) return `${home.replace(/\/+$/, "")}/${raw.slice(2)}`.replace(/\/+$/, "") || "/"
  if (raw.startsWith("/") && !raw.includes("\0")) return raw.length > 1 ? raw.replace(/\/+$/, "") : raw
  return undefined
}

const paths = (value: unknown, key: string, home: string): ReadonlyArray<string> | string => {
  if (value === undefined) return []
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) return `sandbox.${key} must be a list of paths`
  const out: Array<string> = []
  for (const item of value as ReadonlyArray<string>) {
    const expanded = expandPath(item, home)
    if (expanded === undefined) return `sandbox.${key}: ${JSON.stringify(item.slice(0, 80))} is neither absolute nor under ~/`
    out.push(expanded)
  }
  return out
}

/**
 * The settings `config.json`'s `sandbox` value gives (`undefined`: not set), or what is wrong
 * with it. `home` is the user's home, for `~/` paths.
 */
export const fromConfig = (value: unknown, home: string): Settings | { readonly error: string } => {
  if (value === undefined) return DEFAULT
  if (typeof value === "string") return isMode(value) ? ofMode(value) : { error: `sandbox must be "auto", "required" or "off" (it is ${JSON.stringify(value.slice(0, 40))})` }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return { error: "sandbox must be \"auto\", \"required\", \"off\" or an object" }
  const record = value as Record<string, unknown>
  for (const key of Object.keys(record)) if (!KEYS.has(key)) return { error: `sandbox: unknown key ${JSON.stringify(key.slice(0, 40))}` }
  const mode = record["mode"] ?? "auto"
  if (!isMode(mode)) return { error: "sandbox.mode must be \"auto\", \"required\" or \"off\"" }
  const network = record["network"] ?? {}
  if (network === null || typeof network !== "object" || Array.isArray(network)) return { error: "sandbox.network must be an object with \"allow\": [hosts]" }
  for (const key of Object.keys(network)) if (key !== "allow") return { error: `sandbox.network: unknown key ${JSON.stringify(key.slice(0, 40))}` }
  const allow = (network as Record<string, unknown>)["allow"] ?? []
  if (!Array.isArray(allow) || !allow.every((host) => typeof host === "string")) return { error: "sandbox.network.allow must be a list of host names" }
  const bad = (allow as ReadonlyArray<string>).find((host) => !isHostPattern(host))
  if (bad !== undefined) return { error: `sandbox.network.allow: ${JSON.stringify(bad.slice(0, 80))} is not a host name (a name, an address, or *.name)` }
  const denyRead = paths(record["denyRead"], "denyRead", home)
  if (typeof denyRead === "string") return { error: denyRead }
  const allowWrite = paths(record["allowWrite"], "allowWrite", home)
  if (typeof allowWrite === "string") return { error: allowWrite }
  return { mode, allow: (allow as ReadonlyArray<string>).map((host) => host.toLowerCase().replace(/\.$/, "")), denyRead, allowWrite }
}

/**
 * The settings in force: the flag's mode, else the environment's, else the file's; the
 * file's lists always. A flag or variable that is not a mode is an error.
 */
export const resolve = (options: {
  readonly flag?: string | undefined
  readonly env?: string | undefined
  readonly file: Settings
}): Settings | { readonly error: string } => {
  if (options.flag !== undefined && !isMode(options.flag)) return { error: `--sandbox must be auto, required or off (not ${JSON.stringify(options.flag.slice(0, 40))})` }
  if (options.env !== undefined && !isMode(options.env)) return { error: `SKEIN_SANDBOX must be auto, required or off (not ${JSON.stringify(options.env.slice(0, 40))})` }
  const mode = options.flag ?? options.env ?? options.file.mode
  return { ...options.file, mode: mode as Mode }
}
