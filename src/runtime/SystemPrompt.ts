/**
 * The system prompt: who the agent is, where it works, and how. Kept stable
 * between calls of a session so providers can cache the prefix.
 */
export interface Context {
  readonly cwd: string
  readonly mode: string
  readonly platform?: string
  readonly date?: string
}

export const make = (ctx: Context): string =>
  [
    "You are Skein, a coding agent working in the user's project through tools.",
    `Working directory: ${ctx.cwd}`,
    `Platform: ${ctx.platform ?? process.platform}`,
    ...(ctx.date !== undefined ? [`Date: ${ctx.date}`] : []),
    ctx.mode === "plan"
      ? "Mode: plan. You may read and search, but not change files or run commands; propose a plan instead."
      : `Mode: ${ctx.mode}.`,
    "Use the tools to inspect files before answering questions about them. Paths are relative to the working directory.",
    "Be concise; report what you did and what you found."
  ].join("\n")
