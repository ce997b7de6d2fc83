// Run in each test worker before its file: every file of the `isolated` project gets a fresh
// worker, which compiles vitest, effect and the other dependencies it imports natively all over
// again, about a second of each file's start on a busy 2-core machine. V8's compile cache on disk lets each
// worker after the first reuse that code instead. It covers only this process: the children
// tests start (the built agent has a code cache of its own, which tests check) are untouched.
import { enableCompileCache } from "node:module"
import { join } from "node:path"

enableCompileCache(join(import.meta.dirname, "..", "..", "node_modules", ".cache", "skein-tests"))
