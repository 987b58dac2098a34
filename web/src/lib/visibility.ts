// One IntersectionObserver for every lazily drawn element (charts draw when scrolled into view).

type Callback = (visible: boolean) => void
const callbacks = new WeakMap<Element, Callback>()

let observer: IntersectionObserver | null = null

function get(): IntersectionObserver {
  if (!observer) {
    observer = new IntersectionObserver(
      (entries) => {
        for (const e of entries) callbacks.get(e.target)?.(e.isIntersecting)
      },
      { rootMargin: '300px 0px' },
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
