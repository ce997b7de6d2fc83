/**
 * The ACP registry entry in `registry/`: `agent.json` is valid against the registry's own
 * schema (vendored in test/fixtures/registry, see its README), names the package and version
 * this checkout would publish, and starts `skein acp`; `icon.svg` is what the registry accepts
 * (16×16, square, monochrome through `currentColor` only, nothing but shapes).
 */
import Ajv from "ajv"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { REPO_ROOT } from "../support/AgentProcess.ts"

const read = (path: string) => readFileSync(join(REPO_ROOT, path), "utf8")
const entry = JSON.parse(read("registry/agent.json"))
const pkg = JSON.parse(read("package.json"))
const schema = JSON.parse(read("test/fixtures/registry/agent.schema.json"))

const validator = () => {
  const ajv = new Ajv({ strict: true, allErrors: true })
  // The schema's one format, checked for real: an absolute http(s) URL.
  ajv.addFormat("uri", (value: string) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol))
  return ajv.compile(schema)
}

/** `git+https://host/owner/name.git` → `https://host/owner/name`. */
const webUrl = (repository: string | { readonly url: string }) =>
  (typeof repository === "string" ? repository : repository.url).replace(/^git\+/, "").replace(/\.git$/, "")

describe("the ACP registry entry", () => {
  it("is valid against the registry's agent.schema.json", () => {
    const validate = validator()
    expect(validate(entry), JSON.stringify(validate.errors)).toBe(true)
  })

  it("the schema check can fail: an entry without a distribution, or with an unknown field in it, is refused", () => {
    const validate = validator()
    expect(validate({ ...entry, distribution: {} })).toBe(false)
    expect(validate({ ...entry, id: "Skein" })).toBe(false)
    expect(validate({ ...entry, distribution: { npx: { ...entry.distribution.npx, command: "skein" } } })).toBe(false)
  })

  it("is the package this checkout publishes: same version, npx pinned to it, started with `acp`", () => {
    expect(entry.version).toBe(pkg.version)
    expect(entry.distribution).toEqual({ npx: { package: `${pkg.name}@${pkg.version}`, args: ["acp"] } })
    expect(entry.id).toBe(pkg.name)
    expect(entry.license).toBe(pkg.license)
    expect(entry.repository).toBe(webUrl(pkg.repository))
    expect(entry.description.length).toBeGreaterThan(0)
  })

  it("the README and RELEASING.md name the version this checkout publishes wherever they pin one", () => {
    for (const file of ["README.md", "RELEASING.md"]) {
      const pinned = [...read(file).matchAll(/\bskein(?:@|-)(\d+\.\d+\.\d+)\b/g)].map((m) => m[1])
      if (file === "README.md") expect(pinned.length).toBeGreaterThan(0)
      expect(pinned.filter((version) => version !== pkg.version), file).toEqual([])
    }
  })

  describe("icon.svg", () => {
    const svg = read("registry/icon.svg")
    const root = /<svg\b[^>]*>/.exec(svg)?.[0] ?? ""
    const attribute = (tag: string, name: string) => new RegExp(`\\s${name}="([^"]*)"`).exec(tag)?.[1]

    it("is 16×16 and square", () => {
      expect(attribute(root, "xmlns")).toBe("http://www.w3.org/2000/svg")
      expect(attribute(root, "width")).toBe("16")
      expect(attribute(root, "height")).toBe("16")
      expect(attribute(root, "viewBox")).toBe("0 0 16 16")
    })

    it("is monochrome: every paint is currentColor (or none), and it uses currentColor", () => {
      const paints = [...svg.matchAll(/\s(fill|stroke|color|stop-color|flood-color|lighting-color)="([^"]*)"/g)].map((m) => m[2]!.toLowerCase())
      expect(paints.length).toBeGreaterThan(0)
      expect(paints.filter((value) => value !== "currentcolor" && value !== "none")).toEqual([])
      expect(svg).toContain("currentColor")
      // No other way in for a colour: styles, hex or functional colours, gradients, patterns.
      expect(svg).not.toMatch(/style|#[0-9a-f]{3,8}\b|rgba?\(|hsla?\(|url\(|gradient|pattern/i)
    })

    it("holds shapes only: no scripts, images, text or links out", () => {
      const elements = [...svg.matchAll(/<([a-zA-Z][\w:-]*)/g)].map((m) => m[1])
      expect(elements.filter((name) => !["svg", "g", "path", "circle", "ellipse", "rect", "line", "polyline", "polygon"].includes(name!))).toEqual([])
      expect(svg).not.toMatch(/href|on[a-z]+=/i)
    })
  })
})
