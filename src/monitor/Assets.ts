/**
 * The monitor page's script and style sheet. The build bundles the page (`page/main.ts`) with
 * esbuild into `dist/monitor/` and replaces this module, in the CLI bundle, with one that
 * carries both files as strings: nothing to find on disk at run time. From source (tests), the
 * built files are read from `dist/monitor/`.
 */
import * as NodeFs from "node:fs"

export interface Assets {
  readonly js: string
  readonly css: string
}

export const assets = (): Assets => {
  const read = (name: string) => {
    try {
      return NodeFs.readFileSync(new URL(`../../dist/monitor/${name}`, import.meta.url), "utf8")
    } catch {
      return undefined
    }
  }
  const js = read("app.js")
  const css = read("app.css")
  return {
    js: js ?? `document.body.textContent = "The monitor page was not built: run node scripts/build.mjs"`,
    css: css ?? ""
  }
}
