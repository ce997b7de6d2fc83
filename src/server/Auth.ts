/**
 * Sign-in over ACP: the auth methods `initialize` offers, the `auth_required` error that
 * `session/new` (load, resume, fork) answers while no model provider is configured, and what
 * the server needs from its host to re-read or forget the configuration (`SignIn`).
 *
 * Two methods:
 * - `skein-setup`, a `terminal` method (`args: ["setup"]`): the client runs the agent's command
 *   with those arguments in a terminal, where `skein setup` asks for a provider, a key and a
 *   model and writes `config.json`; then it retries. Offered only to a client that runs
 *   terminal methods (`clientCapabilities.auth.terminal`, or the `_meta["terminal-auth"]` flag
 *   clients used before that was stable; those get the command line in `_meta` as well). Its
 *   `env` names the agent's home, so the set-up writes where this agent reads.
 * - `skein-config`, an agent method: `authenticate` with it reads the configuration again
 *   (after `skein setup` in a terminal of one's own, or an edit of `config.json`).
 *
 * The server reads the configuration again by itself whenever a session cannot start, so a
 * client that retries after the terminal method needs no `authenticate` call.
 */
import type * as Effect from "effect/Effect"
import type * as Acp from "../acp/index.ts"
import * as Protocol from "../jsonrpc/Protocol.ts"

export const SETUP_METHOD = "skein-setup"
export const CONFIG_METHOD = "skein-config"

/** How the host reads the configuration again and forgets its keys. */
export interface SignIn {
  /**
   * Why no session can start (no usable provider), reading the configuration again first when
   * it said so before; undefined once one can.
   */
  readonly required: Effect.Effect<string | undefined>
  /** Reads the configuration again (`authenticate`): why sessions still cannot start, if they cannot. */
  readonly reload: Effect.Effect<string | undefined>
  /** Forgets the keys stored in `config.json`, then reads it again (`logout`); fails with a message. */
  readonly logout: Effect.Effect<void, string>
  /** The command line that runs `skein setup` as this agent was started (for `_meta["terminal-auth"]`). */
  readonly setupCommand: { readonly command: string; readonly args: ReadonlyArray<string> }
  /** The agent's home, which the set-up must write to. */
  readonly home: string
}

/** What the client said it can do for sign-in. */
export const clientOffers = (capabilities: Acp.Initialize.ClientCapabilities) => {
  const legacy = capabilities._meta?.["terminal-auth"] === true
  return { terminal: capabilities.auth.terminal || legacy, legacy }
}

/** The auth methods for a client. */
export const methods = (
  offers: { readonly terminal: boolean; readonly legacy: boolean },
  signIn: Pick<SignIn, "setupCommand" | "home">
): Array<Acp.Initialize.AuthMethod> => {
  const env = { SKEIN_HOME: signIn.home }
  const setup: Acp.Initialize.AuthMethodTerminal = {
    type: "terminal",
    id: SETUP_METHOD,
    name: "Set up a model provider",
    description: "Choose Anthropic, OpenAI or an OpenAI-compatible server (such as a local one), enter or name its API key, and pick a model, in a terminal",
    args: ["setup"],
    env,
    ...(offers.legacy
      ? { _meta: { "terminal-auth": { command: signIn.setupCommand.command, args: [...signIn.setupCommand.args], env, label: "Skein set-up" } } }
      : {})
  }
  const config: Acp.Initialize.AuthMethodAgent = {
    id: CONFIG_METHOD,
    name: "Use the configured provider",
    description: "Read the provider settings again (after `skein setup` in a terminal, or an edit of config.json) and use them"
  }
  return offers.terminal ? [setup, config] : [config]
}

/** The first sentence of a reason, for the one-sentence message of an error. */
const firstSentence = (text: string) => {
  const line = text.split("\n")[0]!.trim()
  const end = line.search(/\.(\s|$)/)
  return end < 0 ? line : line.slice(0, end + 1)
}

/** `auth_required` (-32000): no session can start until the user signs in; `data` names the methods and the reason. */
export const authRequired = (reason: string, offered: ReadonlyArray<Acp.Initialize.AuthMethod>): Protocol.RpcError =>
  new Protocol.RpcError({
    code: Protocol.ErrorCode.AuthRequired,
    message: `Authentication required: ${firstSentence(reason)}`,
    data: { authMethods: offered, reason }
  })
