// The `format`s of the official ACP JSON Schema, with real range checks (`used: -1` or a 2^40
// `line` fails). test/support/AcpValidators.ts registers them with Ajv, and the validators it
// generates (standalone code, cached on disk) require this very file, so both check alike.
// CommonJS, since the generated code loads it with `require`, outside any transform.
"use strict"

const integerIn = (min, max) => (n) => Number.isInteger(n) && n >= min && n <= max

module.exports = {
  int32: { type: "number", validate: integerIn(-(2 ** 31), 2 ** 31 - 1) },
  int64: { type: "number", validate: integerIn(-(2 ** 63), 2 ** 63) },
  uint16: { type: "number", validate: integerIn(0, 2 ** 16 - 1) },
  uint32: { type: "number", validate: integerIn(0, 2 ** 32 - 1) },
  uint64: { type: "number", validate: integerIn(0, 2 ** 64) },
  double: { type: "number", validate: (n) => Number.isFinite(n) },
  uri: { type: "string", validate: (s) => URL.canParse(s) }
}
