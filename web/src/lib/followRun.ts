// For panels that read a run's data once they scroll into view (histograms, images, texts): loads
// on first sight, then re-reads at most every `everyMs` while the run writes (its live points say
// it is writing; histograms, images and texts come with them but are not pushed themselves).
import { onBeforeUnmount, onMounted, ref, type Ref } from 'vue'
import { isAbort } from '../api/client'
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

/**
 * A panel's loading as loadWhenSeen drives it, for a component's setup: `fetch` reads the data (a
 * newer load aborts an older one), `apply` takes it; status stays 'ready' through re-reads, so a
 * refresh doesn't flash "loading…". Follows from mount to unmount.
 */
export function usePanelLoad<T>(
  root: Ref<HTMLElement | undefined>,
  project: () => string,
  run: () => string,
  fetch: (signal: AbortSignal) => Promise<T>,
  apply: (data: T) => void,
) {
  const status = ref<'idle' | 'loading' | 'ready' | 'error'>('idle')
  const error = ref('')
  let abort: AbortController | null = null

  async function load() {
    abort?.abort()
    const ac = new AbortController()
    abort = ac
    if (status.value !== 'ready') status.value = 'loading'
    try {
      const data = await fetch(ac.signal)
      if (ac.signal.aborted) return
      apply(data)
      status.value = 'ready'
    } catch (e) {
      if (isAbort(e)) return
      status.value = 'error'
      error.value = e instanceof Error ? e.message : String(e)
    }
  }

  let stop: (() => void) | null = null
  onMounted(() => {
    stop = loadWhenSeen(root.value!, project, run, load)
  })
  onBeforeUnmount(() => {
    abort?.abort()
    stop?.()
  })
  return { status, error }
}
