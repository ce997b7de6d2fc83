// Preloaded by the memory figures of `npm run bench` (node --import bench/gc-probe.mjs) into every
// agent measured, Skein and the baselines alike. On SIGUSR2 it runs a full GC and writes one line
// to stderr: `skein-bench-mem {"rss":…,"heapUsed":…,"external":…,…}` (bytes).
// It installs nothing else; a signal listener does not keep the process alive.
//
// The agents run without --expose-gc: V8 ties a code cache to the flags it was made with, so that
// flag would make Skein start without its cache (and write another one), and the figures would be
// those of a first start. The probe turns the flag on at the first signal instead, long after
// Skein has read its cache, and takes `gc` from a fresh context, where V8 then installs it.
// Its modules are loaded then too, so that the idle figures count nothing of the probe's.
let gc
process.on("SIGUSR2", () => {
  if (gc === undefined) {
    process.getBuiltinModule("node:v8").setFlagsFromString("--expose-gc")
    gc = process.getBuiltinModule("node:vm").runInNewContext("gc")
  }
  gc()
  gc()
  process.stderr.write(`skein-bench-mem ${JSON.stringify(process.memoryUsage())}\n`)
})
