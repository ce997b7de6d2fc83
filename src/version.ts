import pkg from "../package.json" with { type: "json" }

/** Skein's version, from package.json (bundled at build time). */
export const VERSION: string = pkg.version
