/**
 * What tools and the permission policy see of a session's sandbox: where a command will run,
 * and the command line that runs it there. The contract only: `src/sandbox/Sandbox.ts`
 * implements it (the sandbox spawns through `tools/process`, so the types live on this side).
 */
import type * as Effect from "effect/Effect"

/** Where a command will run, decided before it is allowed. */
export type Placement =
  | { readonly _tag: "inside" }
  /** `off`: the setting; `unavailable` (`auto`): no sandbox here; `requested`: the model asked (`sandbox: false`). */
  | { readonly _tag: "outside"; readonly why: "off" | "unavailable" | "requested"; readonly reason?: string | undefined }
  /** It cannot run at all: the sandbox is `required` and cannot take it. */
  | { readonly _tag: "refused"; readonly reason: string }

export interface Program {
  readonly file: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
}

/**
 * A program made ready to run sandboxed: spawn `file args` with `env`, inheriting `fds` as
 * 3, 4, … (`"ignore"`: nothing put there); `endsWithLeader` (always true): what it starts ends
 * once it has exited (its PID namespace), see `ProcessGroup.spawnProgram`.
 */
export interface Launch {
  readonly file: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  readonly fds: ReadonlyArray<number | "ignore">
  readonly endsWithLeader: true
  /** Always true: what it starts cannot leave its cgroup (see `ProcessGroup.spawnProgram`). */
  readonly confined: true
}

export interface SessionSandbox {
  readonly setting: "auto" | "required" | "off"
  /** The hosts the egress proxy admits. */
  readonly allow: ReadonlyArray<string>
  /** Where a command would run; `outsideRequested`: the model asked to run it outside. */
  readonly placement: (outsideRequested: boolean) => Effect.Effect<Placement>
  /**
   * Runs `use` with the command line that runs `program` sandboxed, or with `undefined` when
   * it runs outside (`outside`: the model asked and was allowed; or no sandbox applies and
   * `required` is false). Fails with the reason when it must run sandboxed and cannot.
   * `readOnly`: the roots are mounted read-only (a command allowed because it only reads).
   * The descriptors it lends are valid while `use` runs (spawn within it).
   */
  readonly prepare: <A, E, R>(
    program: Program,
    options: { readonly readOnly: boolean; readonly outside: boolean; readonly required: boolean },
    use: (launch: Launch | undefined) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | string, R>
  /** True once per session: the first time a command runs unsandboxed because `auto` found no sandbox. */
  readonly firstFallback: () => boolean
  /** The line telling the model that the sandbox stopped a command, when its output shows it did. */
  readonly explain: (output: string) => string | undefined
}
