// The README's program examples are files, `examples/*.ts`, that the test suite type-checks
// and runs (test/e2e/readme.test.ts, test/e2e/package.test.ts). The README shows each one
// verbatim in the ```ts block after a marker line:
//
//   <!-- example: examples/embedding.ts -->
//
// `node scripts/readme-examples.mjs` writes those blocks from the files; `--check` only says
// which differ (exit 1), as the test does.
import { readFileSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const FENCE = /^<!-- example: (\S+) -->\n```ts\n([\s\S]*?)^```$/gm

/** Each marked block of `readme`: the file it shows and the code shown. */
export const blocks = (readme) => [...readme.matchAll(FENCE)].map((m) => ({ file: m[1], code: m[2] }))

/** `readme` with each marked block replaced by its file's text (`read(file)`). */
export const render = (readme, read) => readme.replace(FENCE, (_, file) => `<!-- example: ${file} -->\n\`\`\`ts\n${read(file)}\`\`\``)

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = join(dirname(fileURLToPath(import.meta.url)), "..")
  const path = join(root, "README.md")
  const readme = readFileSync(path, "utf8")
  const read = (file) => readFileSync(join(root, file), "utf8")
  const stale = blocks(readme).filter((b) => b.code !== read(b.file)).map((b) => b.file)
  if (process.argv.includes("--check")) {
    if (stale.length > 0) {
      process.stderr.write(`README.md differs from ${stale.join(", ")}: run node scripts/readme-examples.mjs\n`)
      process.exit(1)
    }
  } else {
    writeFileSync(path, render(readme, read))
    process.stdout.write(stale.length > 0 ? `README.md: wrote ${stale.join(", ")}\n` : "README.md: up to date\n")
  }
}
