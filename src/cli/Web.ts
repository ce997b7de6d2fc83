/**
 * The web monitor's options (`--web HOST:PORT`, `--web-approve`), shared by `skein serve` and
 * `skein monitor` (declared in `Usage.OPTIONS`), and the line that announces it. Parsing only: the monitor itself is loaded
 * when one is asked for.
 */
import { isLoopback } from "../remote/Address.ts"
import * as Options from "./Options.ts"

export interface Web {
  readonly host: string
  /** 0: any free port. */
  readonly port: number
  readonly approve: boolean
}

/** `HOST:PORT`, `[V6]:PORT`, or `PORT` alone (on loopback); a port 0-65535 (0: any free one). */
export const address = (raw: string): { readonly host: string; readonly port: number } => {
  const match = /^(?:(?:\[([^\]]+)\]|([^:\s[\]]+)):)?(\d{1,5})$/.exec(raw.trim())
  const port = match === null ? NaN : Number(match[3])
  if (match === null || !(port >= 0 && port <= 65535)) {
    throw new Options.UsageError(`--web takes HOST:PORT (a port 0-65535, 0 for any free one), not "${raw}"`)
  }
  return { host: match[1] ?? match[2] ?? "127.0.0.1", port }
}

/** The monitor the options ask for (`fallback`: the address when `--web` is absent; none: no monitor). */
export const parse = (values: Record<string, string | boolean | undefined>, fallback?: string): Web | undefined => {
  const raw = typeof values["web"] === "string" ? values["web"] : fallback
  const approve = values["web-approve"] === true
  if (raw === undefined) {
    if (approve) throw new Options.UsageError("--web-approve goes with --web HOST:PORT")
    return undefined
  }
  return { ...address(raw), approve }
}

/** The line that says where the monitor is. */
export const announcement = (prefix: string, web: Web, url: string): string =>
  `${prefix}: monitor at ${url}${web.approve ? " (questions can be answered there)" : " (read-only)"}` +
  `${isLoopback(web.host) ? "" : " (not loopback: reachable from other machines)"}\n`
