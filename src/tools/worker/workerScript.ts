/**
 * Where the tool worker's code comes from. From source (tests, `tsc`), it is
 * ./worker.ts itself, which Node runs by stripping its types. The build
 * replaces this module with one that carries the bundled worker as a string
 * (scripts/build.mjs): the CLI is a single bundle run through `vm.Script`,
 * with no file of its own for a worker to load. In the CLI's bundles,
 * `markdown` is the file of the HTML converter (turndown and its DOM, a few
 * hundred KB), which the worker loads with the first page: kept out of the
 * bundle's text, which a process holds in memory for as long as it runs.
 */
export const workerScript = (): { readonly code: string | URL; readonly eval: boolean; readonly markdown?: string | undefined } => ({
  code: new URL("./worker.ts", import.meta.url),
  eval: false
})
