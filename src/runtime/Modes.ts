/**
 * Session modes, with the ids Claude Code users know. Pure data shared by the
 * runtime (which enforces them) and presenters (which show them).
 */
export interface Mode {
  readonly id: ModeId
  readonly name: string
  readonly description: string
}

export type ModeId = "default" | "acceptEdits" | "plan" | "bypassPermissions"

export const modes: ReadonlyArray<Mode> = [
  { id: "default", name: "Default", description: "Asks before edits and commands" },
  { id: "acceptEdits", name: "Accept Edits", description: "Edits inside the workspace are allowed; commands still ask" },
  { id: "plan", name: "Plan", description: "Read-only: reads and searches, no edits or commands" },
  { id: "bypassPermissions", name: "Bypass Permissions", description: "Asks nothing; every tool call is allowed" }
]

export const DEFAULT_MODE: ModeId = "default"

export const isModeId = (id: string): id is ModeId => modes.some((mode) => mode.id === id)
