/**
 * Helpers the dialects share to map provider-neutral content: user blocks as
 * text or images, and the provenance of thinking signatures.
 */
import { blockText, type UserBlock } from "../Vocabulary.ts"

const IMAGE_OMITTED = "[An image was attached, but this model does not accept images.]"

type Piece = { readonly type: "text"; readonly text: string } | { readonly type: "image"; readonly mimeType: string; readonly data: string }

/** User blocks as text and image pieces; images become a note when the model does not accept them. */
export const pieces = (blocks: ReadonlyArray<UserBlock>, images: boolean): Array<Piece> => {
  const out: Array<Piece> = []
  for (const block of blocks) {
    if (block.type === "image") {
      out.push(images ? { type: "image", mimeType: block.mimeType, data: block.data } : { type: "text", text: IMAGE_OMITTED })
    } else {
      const text = blockText(block)
      if (text.length > 0) out.push({ type: "text", text })
    }
  }
  return out
}

export const dataUrl = (piece: { readonly mimeType: string; readonly data: string }) => `data:${piece.mimeType};base64,${piece.data}`

/**
 * Thinking signatures carry what a provider needs back: Anthropic's signature
 * as it came, an Anthropic redacted block as `redacted:<data>`, an OpenAI
 * Responses reasoning item as JSON `{"type":"reasoning",…}`.
 */
export const REDACTED_PREFIX = "redacted:"

interface ResponsesReasoning {
  readonly type: "reasoning"
  readonly id: string
  readonly encrypted_content?: string
}

export const responsesSignature = (item: ResponsesReasoning): string => JSON.stringify(item)

export const parseResponsesSignature = (signature: string | undefined): ResponsesReasoning | undefined => {
  if (signature === undefined || !signature.startsWith("{")) return undefined
  try {
    const value = JSON.parse(signature) as Record<string, unknown>
    return value.type === "reasoning" && typeof value.id === "string" ? (value as unknown as ResponsesReasoning) : undefined
  } catch {
    return undefined
  }
}

/** An Anthropic signature (plain or redacted), not a Responses item. */
export const isAnthropicSignature = (signature: string | undefined): signature is string =>
  signature !== undefined && signature.length > 0 && !signature.startsWith("{")
