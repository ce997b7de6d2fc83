/**
 * Key-shaped strings in text Skein writes itself (provider errors, diagnostics, its own
 * messages): vendor key shapes (`sk-…`, `gsk_…`, `hf_…`), and the value that follows `Bearer`,
 * `token`, `api_key`, `x-api-key` or `authorization` (`token: X`, `api_key=X`,
 * `"x-api-key": "X"`, `Authorization: Bearer X`).
 *
 * Only the value is redacted, never the words around it: `Authorization: Bearer X` becomes
 * `Authorization: Bearer [redacted]`. And what follows such a word in a sentence is often no
 * value at all (`tcp needs a token: set SKEIN_SERVE_TOKEN`, `sent as Authorization: Bearer …`,
 * `a Bearer token`): a word of prose, a placeholder or a variable's name is left as it is.
 * Where the text is data rather than a sentence — a quoted value, or one after `=` — whatever
 * is there is redacted, placeholders aside.
 */

export const MARKER = "[redacted]"

/** `…`, `...`, `<token>`, `***`, `[redacted]`, `$VAR`, `${VAR}`: a stand-in for a value, not one. */
const PLACEHOLDER = /^(?:…|\.{2,}|<[^<>]*>|\*+|\[redacted\]|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)$/
/** A word of a sentence: letters only (a capital first; a hyphen, apostrophe or underscore inside: `api_key`), short. */
const WORD = /^[A-Za-z][a-z]*(?:['_-][a-z]+)*$/
/** A variable's name, written as one: `SKEIN_SERVE_TOKEN`. */
const VARIABLE = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/
/** Punctuation that ends a sentence's word, not a value: `token: set.` */
const TRAILING = /[.,;:!?)\]]+$/
const LONGEST_WORD = 24

/**
 * Whether what follows a key word is no value: a placeholder wherever it is; in a sentence
 * (`data` false: unquoted, after `:` or `Bearer`), also a word or a variable's name.
 */
const isNoValue = (candidate: string, data: boolean): boolean => {
  const bare = candidate.replace(TRAILING, "")
  if (bare.length === 0 || PLACEHOLDER.test(bare) || PLACEHOLDER.test(candidate)) return true
  if (data) return false
  return (WORD.test(bare) && bare.length <= LONGEST_WORD) || VARIABLE.test(bare)
}

/** Vendor key shapes, including the masked echoes some APIs return (`sk-proj-****abcd`): redacted whole. */
const VENDOR: ReadonlyArray<RegExp> = [
  /\b(?:sk|pk|rk)-[A-Za-z0-9_\-*.]{6,}/g,
  /\bgsk_[A-Za-z0-9]{8,}/g,
  /\b(?:xai|hf)[-_][A-Za-z0-9]{8,}/g
]

/** A key word, its separator, an opening quote, an auth scheme: kept. Then the value. */
const KEYED = /((?:api[_-]?key|x-api-key|authorization|token)(["'`]?)\s*([:=])\s*(["'`]?)(?:(?:Bearer|Basic|Token|Bot|Digest)\s+)?)([^\s"'`,}]+)/gi
/** `Bearer` and its credential (the value only). */
const BEARER = /(\bBearer\s+)([A-Za-z0-9._~+/=\-]+)/gi

/** `text` with key-shaped values replaced by `MARKER`. */
export const redact = (text: string): string => {
  let out = text
  for (const pattern of VENDOR) out = out.replace(pattern, MARKER)
  out = out.replace(KEYED, (match, kept: string, closeQuote: string, separator: string, openQuote: string, value: string) =>
    isNoValue(value, openQuote !== "" || closeQuote !== "" || separator === "=") ? match : `${kept}${MARKER}`)
  out = out.replace(BEARER, (match, kept: string, value: string) => (isNoValue(value, false) ? match : `${kept}${MARKER}`))
  return out
}
