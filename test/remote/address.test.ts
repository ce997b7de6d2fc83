/**
 * The addresses `skein serve --listen` and `--connect` take: what each names, and, for one that
 * names nothing, the mistake that was made (the scheme before the port: `http://host:80` is a
 * wrong scheme, not a missing port; `ws://host:80/x` names port 80, which the URL parser drops).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Address from "../../src/remote/Address.ts"

describe("Address.parse", () => {
  it("names a socket, a host and port, or says what is wrong", () => {
    const table: ReadonlyArray<readonly [string, ReturnType<typeof Address.parse>]> = [
      ["unix:/run/skein.sock", { _tag: "unix", path: "/run/skein.sock" }],
      ["tcp://127.0.0.1:7421", { _tag: "tcp", host: "127.0.0.1", port: 7421 }],
      ["tcp://[::1]:80", { _tag: "tcp", host: "::1", port: 80 }],
      ["ws://127.0.0.1:80/skein", { _tag: "ws", host: "127.0.0.1", port: 80, path: "/skein" }],
      ["ws://localhost:7420", { _tag: "ws", host: "localhost", port: 7420, path: "/" }],
      ["http://127.0.0.1:80/x", { _tag: "invalid", message: "\"http://127.0.0.1:80/x\": the scheme must be unix:, tcp:// or ws://" }],
      ["https://example.com/x", { _tag: "invalid", message: "\"https://example.com/x\": the scheme must be unix:, tcp:// or ws://" }],
      ["ws://example.com/x", { _tag: "invalid", message: "\"ws://example.com/x\" needs a port (1-65535)" }],
      ["tcp://h:0", { _tag: "invalid", message: "\"tcp://h:0\" needs a port (1-65535)" }],
      ["tcp://user:pw@h:1", { _tag: "invalid", message: "An address carries no credentials: give the token with SKEIN_SERVE_TOKEN or --token-file" }],
      ["unix:", { _tag: "invalid", message: "\"unix:\" names no socket file (unix:PATH)" }]
    ]
    for (const [url, expected] of table) assert.deepStrictEqual(Address.parse(url), expected, url)
  })
})
