// Declaration files for programs that embed Skein: dist/types/**/*.d.ts, emitted by tsc from
// src/index.ts (tsconfig.build.json), which package.json's `exports["."].types` points at.
// Type-checking the whole graph takes seconds, so this runs in `prepare` (npm install, npm
// pack), not in the bundle build every `npm test` starts with; and only when what they are made
// from changed since the last emit (scripts/declaration-inputs.mjs, the hash in dist/types.inputs).
import { spawnSync } from "node:child_process"
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { declarationInputs, STAMP } from "./declaration-inputs.mjs"

const inputs = declarationInputs(".")
if (existsSync("dist/types/index.d.ts") && existsSync(STAMP) && readFileSync(STAMP, "utf8").trim() === inputs) {
  console.log("declarations: dist/types is up to date")
  process.exit(0)
}
rmSync(STAMP, { force: true })
rmSync("dist/types", { recursive: true, force: true })
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
const emitted = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { stdio: "inherit" })
if (emitted.status !== 0) {
  process.stderr.write("declarations: tsc failed (see above)\n")
  process.exit(1)
}
writeFileSync(STAMP, `${inputs}\n`)
