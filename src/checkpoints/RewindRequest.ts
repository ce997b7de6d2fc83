/**
 * `_session/rewind`, the ACP extension of `/rewind` (`Rewind.ts`): its request, the prompt it
 * runs and its answer. Apart from `Rewind.ts` (and the shadow repository behind it), which
 * loads with the first rewind or checkpoint: the ACP server registers the request at start-up.
 */
import * as Schema from "effect/Schema"
import type { Canonical } from "../log/Event.ts"
import type { UserBlock } from "../Vocabulary.ts"

/** `_session/rewind {sessionId, turn}`: the files and the conversation back to before `turn`. */
export const RewindRequest = Schema.Struct({
  sessionId: Schema.String,
  turn: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
})

/** The prompt a rewind to before `turn` is (logged as the command, so `--rerun` repeats it). */
export const prompt = (turn: number): ReadonlyArray<UserBlock> => [{ type: "text", text: `/rewind ${turn}` }]

/** What `_session/rewind` answers: the last `rewound` event of the log (the one the request's turn logged). */
export const response = (events: ReadonlyArray<Canonical>) => {
  const last = events.findLast((event) => event.type === "rewound")
  if (last === undefined || last.type !== "rewound") return { rewound: false, refused: "the rewind did not run" }
  const { toTurn, restored, removed, skipped, unrestored, refused } = last.data
  return refused !== undefined
    ? { rewound: false, toTurn, refused }
    : { rewound: true, toTurn, restored, removed, skipped, ...(unrestored !== undefined ? { unrestored } : {}) }
}
