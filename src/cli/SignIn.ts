/**
 * `skein acp`'s side of sign-in (`server/Auth.ts`): reading the configuration again when a
 * session cannot start or the client calls `authenticate`, and `logout`, which removes the
 * keys stored in `config.json` (`providers/ConfigWrite.ts`) and reads it again.
 *
 * With the scripted provider there is nothing to sign in to: sessions always start, and
 * `logout` still forgets the stored keys.
 */
import * as Effect from "effect/Effect"
import * as ConfigWrite from "../providers/ConfigWrite.ts"
import type * as Reloadable from "../providers/Reloadable.ts"
import type { SignIn } from "../server/Auth.ts"
import { reload } from "./Config.ts"

export const make = (home: string, reloadable: Reloadable.Reloadable | undefined): SignIn => {
  /** Reads the configuration again: why sessions cannot start, if they cannot. */
  const readAgain: Effect.Effect<string | undefined> = reloadable === undefined
    ? Effect.succeed(undefined)
    : reload(reloadable).pipe(
      Effect.map(() => reloadable.unconfigured()),
      Effect.catch((error) => Effect.succeed(error.message))
    )
  return {
    // Read again only while it says no: a configured agent opens sessions without touching the disk.
    required: Effect.suspend(() => (reloadable?.unconfigured() === undefined ? Effect.succeed(undefined) : readAgain)),
    reload: readAgain,
    logout: ConfigWrite.forgetKeys(home).pipe(
      Effect.mapError((error) => error.message),
      Effect.andThen(Effect.ignore(readAgain))
    ),
    // The launcher that started this process (`dist/skein.cjs` or `dist/skein.mjs`) on this Node, as the client would run it.
    setupCommand: { command: process.execPath, args: [process.argv[1] ?? "skein", "setup"] },
    home
  }
}
