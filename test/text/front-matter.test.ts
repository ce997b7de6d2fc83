/**
 * The front matter reader shared by agents, skills and prompt files: the split into values and
 * body, and what the lenient reader accepts that the strict one refuses (the strict one is also
 * covered through agent definitions in test/agents/definitions.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import * as FrontMatter from "../../src/text/FrontMatter.ts"

const lenient = (content: string) => FrontMatter.split(content, { lenient: true })

describe("FrontMatter.split", () => {
  it("splits values from the body; without front matter the whole file is the body", () => {
    const out = FrontMatter.split("\uFEFF---\r\nname: a\r\ntools: [x, 'y']\r\n---\r\n\r\nBody\r\n")
    assert.deepStrictEqual([...out.values], [["name", { _tag: "text", text: "a" }], ["tools", { _tag: "list", items: ["x", "y"], raw: "[x, 'y']" }]])
    assert.strictEqual(out.body, "\nBody\n")
    assert.isUndefined(out.problem)
    const none = FrontMatter.split("# Title\nText")
    assert.deepStrictEqual([none.values.size, none.body, none.problem?.reason], [0, "# Title\nText", "missing"])
    assert.strictEqual(FrontMatter.split("---\nname: a\n").problem?.reason, "unterminated")
    assert.deepStrictEqual(FrontMatter.split("---\nname: a\ndescription: |\n  x\n---\nB").problem, {
      reason: "invalid",
      message: "front matter: line 3: \"|\" starts YAML this reader does not support; write the value on one line, quoted if need be"
    })
  })

  it("the lenient reader takes block scalars and continued plain values as YAML does", () => {
    const out = lenient(
      "---\nfolded: >\n  one\n  two\n\n  three\nliteral: |-\n  a\n    b\nplain: first\n  second # a comment\nafter: x\n---\nBody"
    )
    assert.deepStrictEqual(FrontMatter.text(out.values, "folded"), "one two\nthree")
    assert.deepStrictEqual(FrontMatter.text(out.values, "literal"), "a\n  b")
    assert.deepStrictEqual(FrontMatter.text(out.values, "plain"), "first second")
    assert.deepStrictEqual(FrontMatter.text(out.values, "after"), "x")
    assert.strictEqual(out.body, "Body")
  })

  it("a value the lenient reader cannot read is invalid for that key alone", () => {
    const out = lenient("---\nmetadata:\n  author: me\n  version: \"1\"\nhint: [a] [b]\nname: ok\nname2: \"open\n---\n")
    assert.isUndefined(out.problem)
    assert.strictEqual(FrontMatter.text(out.values, "name"), "ok")
    assert.strictEqual(out.values.get("metadata")?._tag, "invalid")
    assert.deepStrictEqual(out.values.get("hint"), { _tag: "invalid", message: "line 5: nested lists or maps are not supported", raw: "[a] [b]" })
    assert.deepStrictEqual(FrontMatter.attempt(() => FrontMatter.text(out.values, "name2")), { problem: "front matter: line 7: a quoted value that does not end on its line" })
    assert.deepStrictEqual(FrontMatter.attempt(() => FrontMatter.text(out.values, "metadata")), {
      problem: "front matter: line 3: a nested map or a continued list item, which this reader does not support"
    })
    // A line that is no "key: value" at all still spoils the whole front matter.
    assert.strictEqual(lenient("---\nname: a\njust text\n---\n").problem?.message, "front matter: line 3: expected \"key: value\"")
  })

  it("asWritten gives a value as written, whatever the reader made of it", () => {
    const { values } = lenient("---\na: [x] [y]\nb: [x, y]\nc: plain  text\nd:\ne:\n  - p\n  - q\n---\n")
    assert.deepStrictEqual(["a", "b", "c", "d", "e", "missing"].map((key) => FrontMatter.asWritten(values, key)), ["[x] [y]", "[x, y]", "plain text", undefined, "p q", undefined])
  })

  it("flag reads true and false in any case, and nothing else", () => {
    const { values } = lenient("---\na: true\nb: False\nc: yes\n---\n")
    assert.deepStrictEqual([FrontMatter.flag(values, "a"), FrontMatter.flag(values, "b"), FrontMatter.flag(values, "missing")], [true, false, undefined])
    assert.deepStrictEqual(FrontMatter.attempt(() => FrontMatter.flag(values, "c")), { problem: "front matter: \"c\" must be true or false" })
  })
})
