// One IntersectionObserver for every lazily drawn element (charts draw when scrolled into view).

/** How far outside the viewport an element counts as visible (it starts loading that much ahead). */
const MARGIN_PX = 300

type Callback = (visible: boolean) => void
const callbacks = new WeakMap<Element, Callback>()

let observer: IntersectionObserver | null = null

function get(): IntersectionObserver {
  if (!observer) {
    observer = new IntersectionObserver(
      (entries) => {
        for (const e of entries) callbacks.get(e.target)?.(e.isIntersecting)
      },
      { rootMargin: `${MARGIN_PX}px 0px` },
    )
  }
  return observer
}

export function observeVisibility(el: Element, cb: Callback): () => void {
  callbacks.set(el, cb)
  get().observe(el)
  return () => {
    callbacks.delete(el)
    get().unobserve(el)
  }
}

/** Whether `el` is visible now, as the observer will report it. Reads the layout: call it when the
 *  layout is clean anyway (e.g. from a mounted hook, after the page's DOM is in place), to start
 *  loading without waiting a frame for the observer's first report. */
export function isVisibleNow(el: Element): boolean {
  const r = el.getBoundingClientRect()
  return r.width > 0 && r.bottom > -MARGIN_PX && r.top < innerHeight + MARGIN_PX
}
