/**
 * Where the tool worker's code comes from. From source (tests, `tsc`), it is
 * ./worker.ts itself, which Node runs by stripping its types. The build
 * replaces this module with one that carries the bundled worker as a string
 * (scripts/build.mjs): the CLI is a single bundle run through `vm.Script`,
 * with no file of its own for a worker to load.
 */
export const workerScript = (): { readonly code: string | URL; readonly eval: boolean } => ({
  code: new URL("./worker.ts", import.meta.url),
  eval: false
})
