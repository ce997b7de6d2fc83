// What the declaration files (dist/types, scripts/declarations.mjs) are made from, as one hash:
// every file under src/, the tsconfig files, the package's manifest and lock, the versions of
// TypeScript and of the packages whose types they name, and the script that emits them.
// scripts/declarations.mjs writes it beside dist/types after an emit and emits nothing when it
// is unchanged: a second `prepare` (npm install in an installed checkout, `npm pack` of a copy
// that holds the declarations already, as test/e2e/package.test.ts makes) costs no tsc run.
import { createHash } from "node:crypto"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"

/** The packages the declarations are checked against, by the version installed under `root`. */
const TYPED = ["typescript", "effect", "@effect/platform-node", "@effect/sql-pg", "@types/node"]

const filesUnder = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : entry.isFile() ? [join(dir, entry.name)] : []
  )

/** The hash of the declarations' inputs in the checkout at `root` (paths inside it, not where it lies). */
export const declarationInputs = (root) => {
  const hash = createHash("sha256")
  const add = (name, content) => hash.update(`${name}\0${content.length}\0`).update(content)
  const files = [
    ...filesUnder(join(root, "src")),
    ...["tsconfig.json", "tsconfig.build.json", "package.json", "package-lock.json", "scripts/declarations.mjs", "scripts/declaration-inputs.mjs"]
      .map((file) => join(root, file))
      .filter((file) => existsSync(file))
  ]
  for (const file of files.map((file) => relative(root, file).split("\\").join("/")).sort()) add(file, readFileSync(join(root, file)))
  for (const name of TYPED) {
    const manifest = join(root, "node_modules", name, "package.json")
    add(name, existsSync(manifest) ? String(JSON.parse(readFileSync(manifest, "utf8")).version) : "absent")
  }
  return hash.digest("hex")
}

/** Where scripts/declarations.mjs keeps the hash of what dist/types was made from (not in the package's `files`). */
export const STAMP = "dist/types.inputs"
