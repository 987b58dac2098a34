// For panels that read a run's data once they scroll into view (histograms, images, texts): loads
// on first sight, then re-reads at most every `everyMs` while the run writes (its live points say
// it is writing; histograms, images and texts come with them but are not pushed themselves).
import { onPoints } from '../live/live'
import { observeVisibility } from './visibility'

/** Starts following; returns the function that stops it. */
export function loadWhenSeen(el: Element, project: () => string, run: () => string, load: () => void, everyMs = 10000): () => void {
  let loaded = false
  let timer: number | undefined
  const unobserve = observeVisibility(el, (visible) => {
    if (visible && !loaded) {
      loaded = true
      load()
    }
  })
  const unPoints = onPoints((m) => {
    if (m.project !== project() || m.run !== run() || !loaded || timer !== undefined) return
    timer = window.setTimeout(() => {
      timer = undefined
      load()
    }, everyMs)
  })
  return () => {
    unobserve()
    unPoints()
    if (timer !== undefined) clearTimeout(timer)
  }
}
