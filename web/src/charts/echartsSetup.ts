// The parts of ECharts the app uses, registered once. Only imported through `loadEcharts()` (a
// dynamic import), so it is a chunk of its own that pages without heatmaps never load.
import { init, use } from 'echarts/core'
import { HeatmapChart } from 'echarts/charts'
import { GridComponent, TooltipComponent, VisualMapComponent } from 'echarts/components'
import { CanvasRenderer } from 'echarts/renderers'

use([HeatmapChart, GridComponent, TooltipComponent, VisualMapComponent, CanvasRenderer])

export { init }
