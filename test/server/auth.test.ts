/**
 * Sign-in over ACP, the pure part (`server/Auth.ts`): the auth methods offered to a client and
 * the `auth_required` error, checked against the stable ACP schema. The server's use of them
 * is in test/e2e/sign-in.test.ts.
 */
import { describe, expect, it } from "vitest"
import * as Auth from "../../src/server/Auth.ts"
import { validateDef } from "../support/AcpSchema.ts"

describe("sign-in over ACP", () => {
  const signIn = { setupCommand: { command: "/usr/bin/node", args: ["/opt/skein/dist/skein.mjs", "setup"] }, home: "/home/u/.skein" }

  it("offers the terminal method only to a client that runs them, with its command line for the older flag; each valid against the schema", () => {
    expect(Auth.methods({ terminal: false, legacy: false }, signIn).map((m) => m.id)).toEqual([Auth.CONFIG_METHOD])
    const terminal = Auth.methods({ terminal: true, legacy: false }, signIn)
    expect(terminal[0]).toMatchObject({ type: "terminal", id: Auth.SETUP_METHOD, args: ["setup"], env: { SKEIN_HOME: "/home/u/.skein" } })
    expect(terminal[0]).not.toHaveProperty("_meta")
    const legacy = Auth.methods({ terminal: true, legacy: true }, signIn)
    expect(legacy[0]?._meta).toEqual({ "terminal-auth": { command: "/usr/bin/node", args: ["/opt/skein/dist/skein.mjs", "setup"], env: { SKEIN_HOME: "/home/u/.skein" }, label: "Skein set-up" } })
    for (const method of [...terminal, ...legacy]) expect(validateDef("AuthMethod", method)).toEqual({ ok: true })
  })

  it("reads what the client offers: auth.terminal, or the _meta flag clients sent before it was stable", () => {
    const base = { fs: { readTextFile: false, writeTextFile: false }, terminal: false }
    expect(Auth.clientOffers({ ...base, auth: { terminal: true } })).toEqual({ terminal: true, legacy: false })
    expect(Auth.clientOffers({ ...base, auth: { terminal: false }, _meta: { "terminal-auth": true } })).toEqual({ terminal: true, legacy: true })
    expect(Auth.clientOffers({ ...base, auth: { terminal: false } })).toEqual({ terminal: false, legacy: false })
  })

  it("auth_required is -32000 with a one-sentence message and the methods and the reason in data; a valid ACP error", () => {
    const methods = Auth.methods({ terminal: true, legacy: false }, signIn)
    const error = Auth.authRequired("Provider x needs an API key: set X_KEY. Or run skein setup.\nMore.", methods)
    expect(error.code).toBe(-32000)
    expect(error.message).toBe("Authentication required: Provider x needs an API key: set X_KEY.")
    expect(error.data).toEqual({ authMethods: methods, reason: "Provider x needs an API key: set X_KEY. Or run skein setup.\nMore." })
    expect(validateDef("Error", { code: error.code, message: error.message, data: error.data })).toEqual({ ok: true })
  })
})
