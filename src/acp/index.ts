/**
 * The ACP v1 wire model (Agent Client Protocol, Skein as the agent), as Effect Schemas faithful
 * to the official `schema.json` of `@agentclientprotocol/sdk`.
 *
 * Decoding is lenient where the spec is (absent/`null` optionals, defaults, unknown keys);
 * encoding writes only what the spec allows. `test/acp/schema.test.ts` holds every outgoing
 * schema against the official JSON Schema.
 */
export * as Answers from "./Answers.ts"
export * as Client from "./Client.ts"
export * as Config from "./Config.ts"
export * as Content from "./Content.ts"
export * as Initialize from "./Initialize.ts"
export * as Methods from "./Methods.ts"
export * as Protocol from "./Protocol.ts"
export * as Session from "./Session.ts"
export * as Update from "./Update.ts"
