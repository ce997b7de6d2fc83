/**
 * `skein acp`: the ACP agent over stdio. stdout carries JSON-RPC only; every
 * diagnostic goes to stderr.
 */
import * as Effect from "effect/Effect"
import { Skein } from "../index.ts"
import { serve } from "../server/AcpServer.ts"
import * as Stdio from "../server/Stdio.ts"
import { VERSION } from "../version.ts"
import { skeinConfig } from "./Config.ts"
import * as Options from "./Options.ts"

/** stdout belongs to the protocol: anything else that tries to print goes to stderr. */
const guardStdout = () => {
  const toStderr = (...args: Array<unknown>) => console.error(...args)
  console.log = toStderr
  console.info = toStderr
  console.debug = toStderr
  console.warn = toStderr
  // A client that closes its end must not crash the agent (EPIPE); stdin's end shuts us down.
  process.stdout.on("error", () => {})
}

export const signalExitCode = 0

export const run = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const parsed = yield* Effect.try({ try: () => Options.parse(args, Options.commonOptions), catch: (e) => e })
    if (parsed.values.help === true) {
      process.stdout.write(Options.HELP)
      return 0
    }
    if (parsed.positionals.length > 0) return yield* Effect.fail(new Options.UsageError("skein acp takes no arguments"))
    const common = Options.common(parsed.values)
    const config = yield* skeinConfig(common)
    guardStdout()
    yield* serve(Stdio.transport(), {
      version: VERSION,
      clientAccess: { useClientFs: !common.localFs, useClientTerminal: !common.localTerminal }
    }).pipe(Effect.provide(Skein.layer(config)))
    return 0
  })
