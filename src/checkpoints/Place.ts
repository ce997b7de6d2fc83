/** Where a session's shadow repository lives (`Shadow.ts`), known without loading it. */
import * as NodePath from "node:path"

export const dirOf = (home: string, sessionId: string): string => NodePath.join(home, "checkpoints", `${sessionId}.git`)
