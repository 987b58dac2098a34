// The exact min/max envelope of each run's buckets, filled under the lines straight onto uPlot's
// canvas from a drawAxes hook. As uPlot bands this took two hidden series per run (their paths
// built, their values scanned for the y range) and a clipped fill each: a third of a 50-chart page's
// drawing time. Here: one polygon per run, and the y range widened to hold it.
import uPlot from 'uplot'

export interface Envelope {
  /** per x of the plot's data (u.data[0]); NaN where the run has no range there */
  min: number[]
  max: number[]
  fill: string
}

/** Canvas pixel of a value on a linear or log (distr 3) scale spanning [pos0, pos0 + size) pixels,
 *  low values at pos0 (x) or, with `flip`, at the far end (y). */
function scaleToPx(sc: uPlot.Scale, pos0: number, size: number, flip: boolean): (v: number) => number {
  const log = sc.distr === 3
  const f = (v: number) => (log ? Math.log10(v) : v)
  const lo = f(sc.min ?? 0)
  const k = size / (f(sc.max ?? 1) - lo)
  return flip ? (v) => pos0 + size - (f(v) - lo) * k : (v) => pos0 + (f(v) - lo) * k
}

/** Fills each envelope between min (below) and max (above), across x values where it has none.
 *  Points falling in one pixel column are drawn as one: the lowest min, the highest max. */
export function drawEnvelopes(u: uPlot, envelopes: Envelope[]): void {
  if (!envelopes.length) return
  const xs = u.data[0]
  const { left, top, width, height } = u.bbox
  const xPx = scaleToPx(u.scales.x, left, width, false)
  const yPx = scaleToPx(u.scales.y, top, height, true)
  const column = new Int32Array(xs.length)
  for (let i = 0; i < xs.length; i++) column[i] = Math.round(xPx(xs[i]))
  const ctx = u.ctx
  ctx.save()
  ctx.beginPath()
  ctx.rect(left, top, width, height)
  ctx.clip()
  for (const e of envelopes) {
    ctx.beginPath()
    if (trace(ctx, column, e.max, e.min, yPx, true)) {
      trace(ctx, column, e.min, e.max, yPx, false)
      ctx.closePath()
      ctx.fillStyle = e.fill
      ctx.fill()
    }
  }
  ctx.restore()
}

/** One edge of an envelope: `edge` (max, left to right; or min, right to left) at each pixel column
 *  where both edges have a value, the column's extreme. False when there is no such point. */
function trace(
  ctx: CanvasRenderingContext2D,
  column: Int32Array,
  edge: number[],
  other: number[],
  yPx: (v: number) => number,
  forward: boolean,
): boolean {
  const n = column.length
  const upper = forward // the forward pass draws the max edge
  let drawn = false
  let col = 0
  let acc = NaN
  const flush = () => {
    if (acc !== acc) return
    const y = yPx(acc)
    if (!drawn && forward) ctx.moveTo(col, y)
    else ctx.lineTo(col, y)
    drawn = true
  }
  for (let k = 0; k < n; k++) {
    const i = forward ? k : n - 1 - k
    const v = edge[i]
    if (v !== v || other[i] !== other[i]) continue
    if (column[i] !== col || acc !== acc) {
      flush()
      col = column[i]
      acc = v
    } else if (upper ? v > acc : v < acc) {
      acc = v
    }
  }
  flush()
  return drawn
}

/** A y range function: uPlot's own for the series' data, widened to the envelopes' extent. */
export function rangeWithEnvelopes(extent: () => [number, number], log: boolean): uPlot.Range.Function {
  return (_u, dataMin, dataMax) => {
    const [elo, ehi] = extent()
    const lo = Math.min(dataMin ?? Infinity, elo)
    const hi = Math.max(dataMax ?? -Infinity, ehi)
    if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [null, null] as unknown as uPlot.Range.MinMax
    return log ? uPlot.rangeLog(lo, hi, 10, false) : uPlot.rangeNum(lo, hi, 0.1, true)
  }
}
