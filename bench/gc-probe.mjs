// Preloaded by the memory figures of `npm run bench` (node --expose-gc --import bench/gc-probe.mjs)
// into every agent measured, Skein and the baselines alike. On SIGUSR2 it runs a full GC and
// writes one line to stderr: `skein-bench-mem {"rss":…,"heapUsed":…,"external":…,…}` (bytes).
// It installs nothing else; a signal listener does not keep the process alive.
process.on("SIGUSR2", () => {
  globalThis.gc?.()
  globalThis.gc?.()
  process.stderr.write(`skein-bench-mem ${JSON.stringify(process.memoryUsage())}\n`)
})
