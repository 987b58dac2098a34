// Where a chart's time goes (queued for a connection, network, JSON parse, shaping, drawing), as
// User Timing measures named `tw:<stage>` with the chart's metric in `detail`. Off unless the page
// sets `window.__twTrace = true` before the app starts (bench/dashboard_bench.mjs does, to print a
// per-stage breakdown): then nothing is recorded and each call is one boolean test.

const enabled = typeof window !== 'undefined' && (window as { __twTrace?: boolean }).__twTrace === true

/** performance.now(), or 0 when tracing is off (so callers need not test). */
export function traceStart(): number {
  return enabled ? performance.now() : 0
}

/** Records the stage `name` from `start` (a traceStart() value) to now. */
export function traceEnd(name: string, start: number, detail?: string): void {
  if (!enabled) return
  performance.measure(`tw:${name}`, { start, end: performance.now(), detail })
}
