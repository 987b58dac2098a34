/** The ECharts chunk, loaded on first use. */
export type Echarts = typeof import('./echartsSetup')

let pending: Promise<Echarts> | null = null

export function loadEcharts(): Promise<Echarts> {
  if (!pending) {
    pending = import('./echartsSetup')
    pending.catch(() => (pending = null))
  }
  return pending
}
