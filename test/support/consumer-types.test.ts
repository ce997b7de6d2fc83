/**
 * checkConsumer (ConsumerTypes.ts), which test/e2e/package.test.ts runs on the README's programs
 * against the packed Skein: it reports what is wrong in the package's own declaration files
 * (which `skipLibCheck: true` would hide) and in the project, and not what is wrong inside the
 * declarations of another dependency.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { checkConsumer } from "./ConsumerTypes.ts"

const roots: Array<string> = []
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

const project = (files: Record<string, string>, compilerOptions: Record<string, unknown> = { skipLibCheck: false }) => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "skein-consumer-")))
  roots.push(root)
  const all: Record<string, string> = {
    "tsconfig.json": JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: "ES2023", lib: ["ES2023"], module: "NodeNext", moduleResolution: "NodeNext", types: [], ...compilerOptions }, include: ["*.ts"] }),
    "package.json": JSON.stringify({ type: "module" }),
    "node_modules/lib/package.json": JSON.stringify({ name: "lib", type: "module", exports: { ".": { types: "./index.d.ts" } } }),
    "node_modules/other/package.json": JSON.stringify({ name: "other", type: "module", exports: { ".": { types: "./index.d.ts" } } }),
    // Another dependency, broken inside: not the checked package's business.
    "node_modules/other/index.d.ts": "export declare const other: number\nexport type Broken = NotDeclaredAnywhere\n",
    "main.ts": `import { greet, type Greeting } from "lib"\nimport { other } from "other"\nconst g: Greeting = greet("you")\nexport const used = [g, other]\n`,
    ...files
  }
  for (const [file, text] of Object.entries(all)) {
    mkdirSync(dirname(join(root, file)), { recursive: true })
    writeFileSync(join(root, file), text)
  }
  return root
}

const sound = `export type Greeting = { readonly text: string }\nexport declare const greet: (name: string) => Greeting\n`

describe("checkConsumer", () => {
  it("is silent on a sound package used soundly, whatever another dependency's declarations hold", () => {
    expect(checkConsumer(project({ "node_modules/lib/index.d.ts": sound }), "lib")).toBe("")
  })

  it("reports the package's own declaration files: a name they miss, a module they import that is not installed", () => {
    const text = checkConsumer(project({
      "node_modules/lib/index.d.ts": `import type { Options } from "not-installed"\nexport type Greeting = { readonly text: string; readonly options: Options }\nexport declare const greet: (name: string) => Greeting\nexport type Unused = Missing\n`
    }), "lib")
    expect(text).toContain("node_modules/lib/index.d.ts")
    expect(text).toContain(`Cannot find module 'not-installed'`)
    expect(text).toContain(`Cannot find name 'Missing'`)
    expect(text).not.toContain("NotDeclaredAnywhere")
  })

  it("reports the project's own files", () => {
    const text = checkConsumer(project({ "node_modules/lib/index.d.ts": sound, "wrong.ts": `import { greet } from "lib"\nexport const n: number = greet("x")\n` }), "lib")
    expect(text).toContain("wrong.ts")
    expect(text).toContain("TS2322")
  })

  it("refuses a project that does not ask for its libraries' declarations to be checked", () => {
    expect(() => checkConsumer(project({ "node_modules/lib/index.d.ts": sound }, { skipLibCheck: true }), "lib")).toThrow(/skipLibCheck: false/)
  })
})
