/**
 * The provider used when none is configured: every model call answers, as
 * message text, how to configure one. `skein acp` therefore always starts.
 */
import * as Stream from "effect/Stream"
import type { Provider, StreamPart } from "./Provider.ts"

export const MESSAGE = [
  "Skein has no model provider configured, so it cannot answer yet.",
  "",
  "To try it without a model, run with a script: `skein acp --script FILE` (see the README's \"Scripted provider\").",
  "To use a model, start Skein with a provider and model, e.g. `skein acp --provider openai-chat --model llama3`",
  "with OPENAI_BASE_URL (and OPENAI_API_KEY) set, or set SKEIN_PROVIDER and SKEIN_MODEL."
].join("\n")

export const make = (message: string = MESSAGE): Provider => ({
  name: "unconfigured",
  stream: () =>
    Stream.fromArray<StreamPart>([
      { _tag: "TextDelta", text: message },
      { _tag: "Finish", stop: "end_turn" }
    ])
})
