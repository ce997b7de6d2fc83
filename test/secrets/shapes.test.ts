/**
 * Key shapes in text Skein writes itself: the value after `token:`, `api_key=`, `"x-api-key":`,
 * `Authorization: Bearer`, `Bearer`, and vendor key shapes are redacted, whatever they hold;
 * the words around them are kept, and so are Skein's own sentences that name a token without
 * giving one (`tcp needs a token: set SKEIN_SERVE_TOKEN …`, `Authorization: Bearer <token>`).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as Problems from "../../src/remote/Problems.ts"
import * as Secrets from "../../src/secrets/Secrets.ts"
import * as Shapes from "../../src/secrets/Shapes.ts"

const M = Shapes.MARKER

/** A credential as they come: 8 to 64 characters of a token's alphabet, with a digit (random tokens have them). */
const credential = fc
  .tuple(fc.stringMatching(/^[A-Za-z0-9._~+/=-]{7,63}$/), fc.integer({ min: 0, max: 9 }), fc.nat())
  .map(([body, digit, at]) => {
    const i = at % (body.length + 1)
    return `${body.slice(0, i)}${digit}${body.slice(i)}`
  })
  // A leading or trailing `.` or `=`, `-`, `/` is still the value's; not a quote or a separator.
  .filter((value) => !/^[.]+$/.test(value))

/** Where Skein's text puts a value after a key word, and what must stay around it. */
const contexts: ReadonlyArray<(value: string) => readonly [string, string]> = [
  (v) => [`token: ${v}`, `token: ${M}`],
  (v) => [`the token: ${v} was sent`, `the token: ${M} was sent`],
  (v) => [`api_key=${v} next`, `api_key=${M} next`],
  (v) => [`{"x-api-key": "${v}"}`, `{"x-api-key": "${M}"}`],
  (v) => [`Authorization: Bearer ${v}`, `Authorization: Bearer ${M}`],
  (v) => [`authorization=Basic ${v}`, `authorization=Basic ${M}`],
  (v) => [`{"authorization":"Bearer ${v}"}`, `{"authorization":"Bearer ${M}"}`],
  (v) => [`curl -H 'Authorization: Token ${v}' …`, `curl -H 'Authorization: Token ${M}' …`],
  (v) => [`sent Bearer ${v} to it`, `sent Bearer ${M} to it`]
]

/** Words of a sentence: letters, as Skein's messages are written. */
const word = fc.stringMatching(/^[a-z]{1,12}$/)
const keyWord = fc.constantFrom("token", "Token", "api_key", "authorization", "Authorization", "x-api-key", "Bearer")

describe("Shapes: values are redacted", () => {
  it("a credential after any key word, in any of Skein's contexts: the value goes, the words stay", () => {
    fc.assert(fc.property(credential, fc.nat({ max: contexts.length - 1 }), (value, which) => {
      const [text, expected] = contexts[which]!(value)
      assert.strictEqual(Shapes.redact(text), expected)
    }))
  })

  it("a quoted value or one after `=` is a value even when it reads like a word", () => {
    assert.strictEqual(Shapes.redact(`"x-api-key": "zzz"`), `"x-api-key": "${M}"`)
    assert.strictEqual(Shapes.redact("token=hunter"), `token=${M}`)
    assert.strictEqual(Shapes.redact(`{"token":"none"}`), `{"token":"${M}"}`)
  })

  it("vendor key shapes are redacted whole, masked echoes too", () => {
    assert.strictEqual(Shapes.redact("key sk-ant-api03-XYZxyz123456 and sk-proj-****abcd, gsk_abcdefgh12, hf_abcdefgh12"), `key ${M} and ${M}, ${M}, ${M}`)
  })

  it("provider errors keep losing their keys (with the known values)", () => {
    const text = "key the-actual-secret-value, Bearer abc.def-123, sk-proj-****abcd, api_key=hunter22222, \"x-api-key\": \"zzz\""
    const clean = Secrets.redactWithShapes(text, ["the-actual-secret-value"])
    for (const leaked of ["the-actual-secret-value", "abc.def-123", "sk-proj", "hunter22222", "zzz"]) assert.notInclude(clean, leaked)
    assert.strictEqual(clean, `key ${M}, Bearer ${M}, ${M}, api_key=${M}, "x-api-key": "${M}"`)
  })
})

describe("Shapes: Skein's own words are kept", () => {
  it("sentences that name a token without giving one", () => {
    const url = "tcp://127.0.0.1:7421"
    const own = [
      "skein: tcp needs a token: set SKEIN_SERVE_TOKEN or pass --token-file FILE",
      `skein: ${url} needs the server's token: set SKEIN_SERVE_TOKEN or pass --token-file FILE`,
      "A valid token is needed (Authorization: Bearer …)",
      "A valid token is needed (Authorization: Bearer <token>)",
      "refused: no token (the first line must be `Authorization: Bearer <token>`)",
      "sent as Authorization: Bearer <token>, and compared in constant time",
      "a Bearer token, as Authorization: Bearer ${SKEIN_SERVE_TOKEN}",
      "the token: SKEIN_SERVE_TOKEN, or the file --token-file names",
      "token: ***",
      `token: ${M}`,
      Problems.explain({ _tag: "Refused", reason: "refused", why: "a wrong token" }, url),
      Problems.explain({ reason: { _tag: "SocketOpenError", cause: { code: "ECONNREFUSED" } } }, url)
    ]
    for (const text of own) assert.strictEqual(Secrets.redactWithShapes(text), text)
  })

  it("prose around the key words, whatever the words", () => {
    fc.assert(fc.property(fc.array(fc.oneof(word, fc.tuple(keyWord, word).map(([k, w]) => `${k}: ${w}`), keyWord), { minLength: 1, maxLength: 12 }), (words) => {
      const text = `${words.join(" ")}.`
      assert.strictEqual(Shapes.redact(text), text)
    }))
  })
})
