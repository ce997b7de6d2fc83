/**
 * ACP content: the blocks of a prompt (client → agent) and of message chunks and tool output
 * (agent → client). One decoded shape serves both directions, so a prompt block can be
 * replayed as a `user_message_chunk` as is.
 *
 * Spec: `$defs` ContentBlock, TextContent, ImageContent, AudioContent, ResourceLink,
 * EmbeddedResource, EmbeddedResourceResource, TextResourceContents, BlobResourceContents,
 * Annotations.
 */
import * as Schema from "effect/Schema"
import * as Lazy from "../Lazy.ts"
import { Double, Int64, lenient, meta, Role } from "./Common.ts"

/** Hints for the client about how to use or show a block. */
export const Annotations = Lazy.schema("acp.Annotations", () => Schema.Struct({
  audience: lenient(Schema.Array(Role)),
  lastModified: lenient(Schema.String),
  priority: lenient(Double),
  _meta: meta
}))
export type Annotations = typeof Annotations.Type

export const TextContent = Lazy.schema("acp.TextContent", () => Schema.Struct({
  type: Schema.Literal("text"),
  annotations: lenient(Annotations),
  text: Schema.String,
  _meta: meta
}))
export type TextContent = typeof TextContent.Type

/** Base64 `data`; only sent to an agent that advertises `promptCapabilities.image`. */
export const ImageContent = Lazy.schema("acp.ImageContent", () => Schema.Struct({
  type: Schema.Literal("image"),
  annotations: lenient(Annotations),
  data: Schema.String,
  mimeType: Schema.String,
  uri: lenient(Schema.String),
  _meta: meta
}))
export type ImageContent = typeof ImageContent.Type

/** Base64 `data`; only sent to an agent that advertises `promptCapabilities.audio`. */
export const AudioContent = Lazy.schema("acp.AudioContent", () => Schema.Struct({
  type: Schema.Literal("audio"),
  annotations: lenient(Annotations),
  data: Schema.String,
  mimeType: Schema.String,
  _meta: meta
}))
export type AudioContent = typeof AudioContent.Type

/** A reference to a resource the agent can read itself. */
export const ResourceLink = Lazy.schema("acp.ResourceLink", () => Schema.Struct({
  type: Schema.Literal("resource_link"),
  annotations: lenient(Annotations),
  description: lenient(Schema.String),
  mimeType: lenient(Schema.String),
  name: Schema.String,
  size: lenient(Int64),
  title: lenient(Schema.String),
  uri: Schema.String,
  _meta: meta
}))
export type ResourceLink = typeof ResourceLink.Type

export const TextResourceContents = Lazy.schema("acp.TextResourceContents", () => Schema.Struct({
  mimeType: lenient(Schema.String),
  text: Schema.String,
  uri: Schema.String,
  _meta: meta
}))
export type TextResourceContents = typeof TextResourceContents.Type

/** Base64 `blob`. */
export const BlobResourceContents = Lazy.schema("acp.BlobResourceContents", () => Schema.Struct({
  blob: Schema.String,
  mimeType: lenient(Schema.String),
  uri: Schema.String,
  _meta: meta
}))
export type BlobResourceContents = typeof BlobResourceContents.Type

/** Untagged on the wire: text contents carry `text`, blob contents carry `blob`. */
export const EmbeddedResourceResource = Lazy.schema("acp.EmbeddedResourceResource", () => Schema.Union([TextResourceContents, BlobResourceContents]))
export type EmbeddedResourceResource = typeof EmbeddedResourceResource.Type

/** The contents of a resource inlined in the prompt (`promptCapabilities.embeddedContext`). */
export const EmbeddedResource = Lazy.schema("acp.EmbeddedResource", () => Schema.Struct({
  type: Schema.Literal("resource"),
  annotations: lenient(Annotations),
  resource: EmbeddedResourceResource,
  _meta: meta
}))
export type EmbeddedResource = typeof EmbeddedResource.Type

/** A block of content, discriminated by `type`. */
export const ContentBlock = Lazy.schema("acp.ContentBlock", () => Schema.Union([TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource]))
export type ContentBlock = typeof ContentBlock.Type
