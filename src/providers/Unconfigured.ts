/**
 * The provider used when none is configured: every model call answers, as
 * message text, how to configure one. `skein acp` therefore always starts.
 */
import * as Stream from "effect/Stream"
import type { Provider, StreamPart } from "./Provider.ts"

export const MESSAGE = [
  "Skein has no model provider configured, so it cannot answer yet.",
  "",
  "Run `skein setup` in a terminal to choose one (Anthropic, OpenAI or an OpenAI-compatible server), or",
  "set one of these in the agent's environment, then restart it:",
  "- ANTHROPIC_API_KEY for Claude (provider anthropic-messages)",
  "- OPENAI_API_KEY for OpenAI (provider openai-responses)",
  "- OPENAI_BASE_URL=http://127.0.0.1:11434/v1 with --model llama3 (or SKEIN_MODEL) for Ollama, vLLM, llama.cpp,",
  "  LM Studio or any OpenAI-compatible server (provider openai-chat)",
  "or declare providers and models in $SKEIN_HOME/config.json; `--provider`/`--model` (SKEIN_PROVIDER/SKEIN_MODEL) choose.",
  "`skein doctor` shows what is configured. To try Skein without a model, run it with a script: `skein acp --script FILE`."
].join("\n")

export const make = (message: string = MESSAGE): Provider => ({
  name: "unconfigured",
  stream: () =>
    Stream.fromArray<StreamPart>([
      { _tag: "TextDelta", text: message },
      { _tag: "Finish", stop: "end_turn" }
    ])
})
