// What every uPlot chart of the app shares: axis styling and labels, and drag-to-zoom that hands
// the selected x range to the page (which puts it in the URL) instead of zooming locally.
import type uPlot from 'uplot'
import type { XMode } from '../components/ScalarChart.vue'
import { fmtDuration, fmtTimeTick } from './format'
import type { chartColors } from './theme'

/** A y (or step) axis label: 4 significant digits, exponents for very small or large values. */
export function fmtAxis(v: number | null): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return ''
  const a = Math.abs(v)
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(1).replace('.0e', 'e')
  return String(Number(v.toPrecision(4)))
}

/** The x and y axes in the theme's colours; wall-time x labels as the GPU heatmap's (fmtTimeTick). */
export function chartAxes(colors: ReturnType<typeof chartColors>, xMode: () => XMode): uPlot.Axis[] {
  const grid = { stroke: colors.grid, width: 1 }
  const font = '11px system-ui, sans-serif'
  const xValues = (u: uPlot, splits: number[], _axis: number, _space: number, incr: number) => {
    const span = (u.scales.x.max ?? 0) - (u.scales.x.min ?? 0)
    return splits.map((v) => {
      if (v == null) return ''
      if (xMode() === 'wall') return fmtTimeTick(v, incr, span)
      return xMode() === 'relative' ? fmtDuration(v) : fmtAxis(v)
    })
  }
  return [
    { stroke: colors.axis, grid, ticks: grid, values: xValues, font },
    { stroke: colors.axis, grid, ticks: grid, size: 60, values: (_u, splits) => splits.map((v) => fmtAxis(v)), font },
  ]
}

/** A setSelect hook: a drag wider than 4 px becomes zoom(from, to) (whole steps on the step axis). */
export function zoomOnSelect(xMode: () => XMode, zoom: (from: number, to: number) => void): (u: uPlot) => void {
  return (u) => {
    if (u.select.width < 4) return
    let a = u.posToVal(u.select.left, 'x')
    let b = u.posToVal(u.select.left + u.select.width, 'x')
    if (xMode() === 'step') {
      a = Math.max(0, Math.floor(a))
      b = Math.ceil(b)
    }
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false)
    if (b > a) zoom(a, b)
  }
}

/** The cursor: dragging selects an x range (for zoomOnSelect; uPlot itself doesn't zoom), a double-click calls reset. */
export function dragZoomCursor(reset: () => void): uPlot.Cursor {
  return {
    drag: { x: true, y: false, setScale: false },
    points: { show: false },
    bind: {
      dblclick: () => () => {
        reset()
        return null
      },
    },
  }
}
