/**
 * The ACP wire's side of the runtime's values: its errors as JSON-RPC errors, and a prompt's
 * content as the runtime's user blocks. Pure.
 */
import * as Effect from "effect/Effect"
import * as Blocks from "../acp/Blocks.ts"
import type * as Acp from "../acp/index.ts"
import * as Protocol from "../jsonrpc/Protocol.ts"
import type { RuntimeError } from "../runtime/Api.ts"
import type { SessionError } from "../session/Protocol.ts"
import type { UserBlock } from "../Vocabulary.ts"

export const runtimeError = (error: RuntimeError): Protocol.RpcError => {
  switch (error.reason) {
    case "not_found":
      return Protocol.resourceNotFound(error.message)
    case "invalid_cwd":
    case "invalid_mode":
    case "invalid_request":
      return Protocol.invalidParams(error.message)
    case "locked":
    case "log":
    case "unavailable":
    case "limit":
      return new Protocol.RpcError({ code: Protocol.ErrorCode.InternalError, message: error.message })
  }
}

export const sessionError = (error: SessionError): Protocol.RpcError =>
  error.reason === "closed"
    ? Protocol.resourceNotFound(error.message)
    : error.reason === "log" || error.reason === "unavailable"
    ? new Protocol.RpcError({ code: Protocol.ErrorCode.InternalError, message: error.message })
    : Protocol.invalidParams(error.message)

/** ACP prompt content → runtime user blocks; refuses kinds not advertised (audio, embedded resources). */
export const userBlocks = (prompt: ReadonlyArray<Acp.Content.ContentBlock>): Effect.Effect<ReadonlyArray<UserBlock>, Protocol.RpcError> => {
  const blocks: Array<UserBlock> = []
  for (const block of prompt) {
    const converted = block.type === "audio" || block.type === "resource" ? undefined : Blocks.toUserBlock(block)
    if (converted === undefined) return Effect.fail(Protocol.invalidParams(`Prompt content of type "${block.type}" is not supported (see promptCapabilities)`))
    blocks.push(converted)
  }
  return Effect.succeed(blocks)
}
