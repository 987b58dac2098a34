export function fmtValue(v: number | null | undefined): string {
  if (v === null || v === undefined) return '–'
  if (Number.isNaN(v)) return 'NaN'
  if (!Number.isFinite(v)) return v > 0 ? '∞' : '-∞'
  const a = Math.abs(v)
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3)
  return Number(v.toPrecision(5)).toString()
}

export function fmtDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '–'
  const s = Math.round(seconds)
  if (s < 60) return `${s}s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m}m ${s % 60}s`
  const h = Math.floor(m / 60)
  if (h < 48) return `${h}h ${m % 60}m`
  return `${Math.floor(h / 24)}d ${h % 24}h`
}

export function fmtAgo(unix: number, now: number): string {
  if (!unix) return '–'
  const d = now - unix
  if (d < 5) return 'just now'
  return `${fmtDuration(d)} ago`
}

export function fmtTime(unix: number): string {
  if (!unix) return '–'
  const d = new Date(unix * 1000)
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}

/** A wall-time axis label (24-hour clock, local time), for the line charts' x axes and the GPU
 *  heatmap alike: seconds shown only when the labels are under a minute apart, the date (MM-DD)
 *  only when the axis spans a day or more, the year and month only when labels are
 *  that far apart. */
export function fmtTimeTick(unix: number, labelSpacing: number, axisSpan: number): string {
  const full = fmtTime(unix) // YYYY-MM-DD HH:MM:SS
  if (full === '–') return ''
  if (labelSpacing >= 365 * 86400) return full.slice(0, 4) // YYYY
  if (labelSpacing >= 28 * 86400) return full.slice(0, 7) // YYYY-MM
  if (labelSpacing >= 86400) return full.slice(5, 10) // MM-DD
  const clock = labelSpacing < 60 ? full.slice(11) : full.slice(11, 16)
  return axisSpan >= 86400 ? `${full.slice(5, 10)} ${clock}` : clock
}

/** Validates a user regular expression; returns it, or the reason it is invalid. */
export function compileRegex(src: string, flags = 'i'): { re: RegExp | null; error: string } {
  if (!src) return { re: null, error: '' }
  try {
    return { re: new RegExp(src, flags), error: '' }
  } catch (e) {
    return { re: null, error: e instanceof Error ? e.message : String(e) }
  }
}
