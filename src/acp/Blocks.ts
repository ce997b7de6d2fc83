/**
 * ACP content blocks and Skein's user blocks (`Vocabulary.UserBlock`), both ways, and a block as
 * text: the one place they are converted (a prompt coming in, a prompt replayed or sent to an
 * external agent, an external agent's output read back). Pure; types only from the wire model.
 */
import { blockText, type UserBlock } from "../Vocabulary.ts"
import type { ContentBlock } from "./Content.ts"

/** An ACP block as a user block; `undefined` for audio, which Skein has no block for. */
export const toUserBlock = (block: ContentBlock): UserBlock | undefined => {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text }
    case "resource_link":
      return {
        type: "resource_link",
        uri: block.uri,
        name: block.name,
        ...(block.mimeType != null ? { mimeType: block.mimeType } : {}),
        ...(block.title != null ? { title: block.title } : {}),
        ...(block.description != null ? { description: block.description } : {}),
        ...(block.size != null ? { size: Number(block.size) } : {})
      }
    case "image":
      return { type: "image", data: block.data, mimeType: block.mimeType, ...(block.uri != null ? { uri: block.uri } : {}) }
    case "resource": {
      const { resource } = block
      return {
        type: "resource",
        uri: resource.uri,
        ...(resource.mimeType != null ? { mimeType: resource.mimeType } : {}),
        ...("text" in resource ? { text: resource.text } : { blob: resource.blob })
      }
    }
    case "audio":
      return undefined
    default:
      return block satisfies never
  }
}

/** A user block as an ACP block. */
export const fromUserBlock = (block: UserBlock): ContentBlock => {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text }
    case "image":
      return block.uri !== undefined
        ? { type: "image", data: block.data, mimeType: block.mimeType, uri: block.uri }
        : { type: "image", data: block.data, mimeType: block.mimeType }
    case "resource_link": {
      const { type: _type, ...rest } = block
      return { type: "resource_link", ...rest }
    }
    case "resource":
      return {
        type: "resource",
        resource: block.blob !== undefined
          ? { uri: block.uri, blob: block.blob, ...(block.mimeType !== undefined ? { mimeType: block.mimeType } : {}) }
          : { uri: block.uri, text: block.text ?? "", ...(block.mimeType !== undefined ? { mimeType: block.mimeType } : {}) }
      }
    default:
      return block satisfies never
  }
}

/** An ACP block as text, as a prompt's block reads to the model (`Vocabulary.blockText`); audio as `[audio]`. */
export const text = (block: ContentBlock): string => {
  const user = toUserBlock(block)
  return user === undefined ? "[audio]" : blockText(user)
}
